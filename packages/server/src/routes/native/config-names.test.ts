// A JSON body with a `__proto__` key is refused everywhere (body-parser.ts): a signal can never set an
// output of that name, nor a deployment's input_values an input of it. Such a config is refused when
// it is created, with the field named; `constructor` can be set by a signal, so it stays a valid name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

test('a config input or output named __proto__ is a coded 400 naming the field, and nothing is stored', async () => {
  const { app, done } = await testApp();
  try {
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['output', { outputs: [{ name: 'result' }, { name: '__proto__', error_output: true }] }, /outputs\[1\]\.name/],
      ['input', { inputs: [{ name: '__proto__', default: 'x' }] }, /inputs\[0\]\.name/],
    ];
    for (const [what, body, field] of cases) {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/default/software_configs',
        headers: ADMIN,
        payload: JSON.stringify({ name: 'cfg', group: 'script', config: 'true', ...body }),
      });
      assert.equal(reply.statusCode, 400, `${what}: ${reply.body}`);
      assert.equal(errorCode(reply), 'ERR_CONFIG_INVALID', what);
      assert.match(reply.json<{ error: { message: string } }>().error.message, field, what);
      assert.match(reply.json<{ error: { message: string } }>().error.message, /__proto__/, what);
    }
    assert.deepEqual(await app.services.store.reader.selectFrom('software_configs').select('id').execute(), [], 'nothing stored');
    assert.deepEqual(await app.services.store.reader.selectFrom('events').select('type').execute(), [], 'no event');
  } finally {
    await done();
  }
});

test('an output named constructor is accepted, and a signal sets it', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await registerServer(app);
    const config = await createConfig(app, { outputs: [{ name: 'constructor' }] });
    const id = await createDeployment(app, config, vm.id);
    const signal = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/signal`,
      headers: vm.auth,
      payload: { deploy_status_code: 0, constructor: 'built' },
    });
    assert.equal(signal.statusCode, 200, signal.body);
    const shown = await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
    const deployment = shown.json<{ software_deployment: { status: string; output_values: Record<string, unknown> } }>()
      .software_deployment;
    assert.equal(deployment.status, 'COMPLETE');
    assert.equal(deployment.output_values.constructor, 'built');
  } finally {
    await done();
  }
});
