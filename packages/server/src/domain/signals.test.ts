import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../test-support.ts';

test('a deployment set IN_PROGRESS again without a new action refuses the same keyless signal, saying why and what to do', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id);
    const signal = () =>
      app.inject({ method: 'POST', url: `/v1/guest/deployments/${id}/signal`, headers: server.auth, payload: { deploy_status_code: 0 } });
    assert.equal((await signal()).json().status, 'COMPLETE');
    const rearmed = await app.inject({
      method: 'PUT',
      url: `/v1/default/software_deployments/${id}`,
      headers: ADMIN,
      payload: { status: 'IN_PROGRESS' },
    });
    assert.equal(rearmed.json().software_deployment.status, 'IN_PROGRESS', rearmed.body);
    const again = await signal();
    assert.equal(again.statusCode, 400);
    assert.equal(errorCode(again), 'ERR_SIGNAL_INVALID');
    assert.match(again.json().error.message, /already applied to this action before the deployment was set IN_PROGRESS again/);
    assert.doesNotMatch(again.json().error.message, /this Idempotency-Key was already used/, 'no key was sent');
    // With a key of its own, the agent's signal settles the re-armed deployment.
    const keyed = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/signal`,
      headers: { ...server.auth, 'idempotency-key': 'rerun-1' },
      payload: { deploy_status_code: 0 },
    });
    assert.equal(keyed.statusCode, 200, keyed.body);
    assert.equal(keyed.json().status, 'COMPLETE');
  } finally {
    await done();
  }
});
