import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { WaitCondition } from '@hearth/protocol';
import { ADMIN, errorCode, injectUrl, testApp } from '../test-support.ts';

/**
 * A wait condition whose deadline has passed, before the sweeper (a setInterval, mocked here so it
 * never runs) has failed it: what a late signal or heartbeat meets in the gap between the two.
 */
async function pastDeadline(app: FastifyInstance, name: string) {
  await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 's' } });
  const created = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/s/wait_conditions',
    headers: ADMIN,
    payload: { name, count: 2, timeout: 1 },
  });
  assert.equal(created.statusCode, 201, created.body);
  const handle = created.json().wait_condition.handle as { cfn_url: string; signal_url: string; endpoint: string; token: string };
  const first = await injectUrl(app, 'POST', handle.signal_url, { id: 'early', reason: 'in time' }, { 'content-type': 'application/json' });
  assert.equal(first.statusCode, 200, first.body);
  await sleep(1100);
  const state = async () =>
    (await app.inject({ url: `/v1/default/stacks/s/wait_conditions/${name}`, headers: ADMIN })).json<{ wait_condition: WaitCondition }>()
      .wait_condition;
  assert.equal((await state()).status, 'IN_PROGRESS', 'the sweeper must not have run');
  return { handle, state };
}

test('a signal after the deadline is refused (409) and times the condition out, even before the sweeper runs', async () => {
  mock.timers.enable({ apis: ['setInterval'] });
  const { app, done } = await testApp();
  try {
    const { handle, state } = await pastDeadline(app, 'late');
    // A CFN handle signal (cfn-signal's body) that would have been the second of two.
    const late = await injectUrl(app, 'PUT', handle.cfn_url, { Status: 'SUCCESS', Reason: 'too late', UniqueId: 'late', Data: 'd' });
    assert.equal(late.statusCode, 409, late.body);
    assert.match(late.body, /<Code>InvalidAction<\/Code>.*is already FAILED.*ERR_WAIT_CONDITION_DONE/);
    const after = await state();
    assert.equal(after.status, 'FAILED');
    assert.equal(after.status_reason, 'WaitConditionTimeout: 1 of 2 received - in time');
    assert.deepEqual(Object.keys(after.data), ['early'], 'the late signal is not stored');
    // Heat's token-authenticated handle endpoint gets the same answer.
    const heat = await injectUrl(app, 'POST', handle.endpoint, { id: 'late2' }, { 'x-auth-token': handle.token });
    assert.equal(heat.statusCode, 409, heat.body);
    assert.equal(errorCode(heat), 'ERR_WAIT_CONDITION_DONE');
  } finally {
    await done();
    mock.timers.reset();
  }
});

test('a heartbeat after the deadline does not revive the condition: 409, and it is FAILED by timeout', async () => {
  mock.timers.enable({ apis: ['setInterval'] });
  const { app, done } = await testApp();
  try {
    const { state } = await pastDeadline(app, 'beat');
    const beat = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/s/wait_conditions/beat/heartbeat',
      headers: ADMIN,
      payload: { extend: 600 },
    });
    assert.equal(beat.statusCode, 409, beat.body);
    assert.equal(errorCode(beat), 'ERR_WAIT_CONDITION_DONE');
    const after = await state();
    assert.equal(after.status, 'FAILED');
    assert.equal(after.status_reason, 'WaitConditionTimeout: 1 of 2 received - in time');
  } finally {
    await done();
    mock.timers.reset();
  }
});
