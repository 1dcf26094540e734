import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, testApp } from './test-support.ts';

// The reason a 400 gives is what an operator reads to fix the request: one line per bad value, not
// one per branch Ajv tried.
test('a schema failure names each bad value once, with what it must be', async () => {
  const { app, done } = await testApp();
  try {
    const reasons: Array<[unknown, string]> = [
      [
        { group: 'script', inputs: [{ name: 'a', type: 'Strin' }] },
        'body/inputs/0/type must be one of "String", "Number", "CommaDelimitedList", "Json", "Boolean"',
      ],
      [{ group: 'script', inputs: [{ name: 'a', typo: 'String' }] }, 'body/inputs/0 must not have the property "typo"'],
      [{ group: 'script', inputs: 'x' }, 'body/inputs must be array or null'],
      [{ group: 'script', inputs: [{ name: 5 }] }, 'body/inputs/0/name must be string'],
      [[], 'body must be object'],
    ];
    for (const [payload, reason] of reasons) {
      const reply = await app.inject({ method: 'POST', url: '/v1/default/software_configs', headers: ADMIN, payload: payload as object });
      assert.equal(reply.statusCode, 400, reply.body);
      const body = reply.json<{ error: { code: string; details: { reason: string } } }>();
      assert.equal(body.error.code, 'ERR_REQUEST_INVALID');
      assert.equal(body.error.details.reason, reason, JSON.stringify(payload));
    }
    const action = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: '00000000-0000-4000-8000-000000000000', server_id: 'x', signal_transport: 'BOGUS' },
    });
    assert.equal(
      action.json<{ error: { details: { reason: string } } }>().error.details.reason,
      'body/signal_transport must be one of "HEARTH_SIGNAL", "CFN_SIGNAL", "HEAT_SIGNAL", "TEMP_URL_SIGNAL", "NO_SIGNAL"',
    );
    const limit = await app.inject({ url: '/v1/default/events?limit=abc', headers: ADMIN });
    assert.equal(limit.json<{ error: { details: { reason: string } } }>().error.details.reason, 'querystring/limit must be integer');
  } finally {
    await done();
  }
});
