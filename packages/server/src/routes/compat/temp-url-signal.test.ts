import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { signTempUrl } from '@hearth/protocol/signing';
import { ADMIN, createConfig, createDeployment, errorCode, injectUrl, registerServer, testApp } from '../../test-support.ts';
import { TEMP_URL_CONTAINERS, tempUrl } from '../../domain/transports.ts';

/** The deploy_signal_id the server's metadata gives the deployment now. */
async function signalUrl(app: FastifyInstance, serverId: string): Promise<string> {
  const reply = await app.inject({ url: `/v1/default/software_deployments/metadata/${serverId}`, headers: ADMIN });
  const inputs = reply.json<{ metadata: Array<{ inputs: Array<{ name: string; value: string }> }> }>().metadata[0]!.inputs;
  return inputs.find((i) => i.name === 'deploy_signal_id')!.value;
}

async function deployment(app: FastifyInstance, id: string) {
  const reply = await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
  return reply.json<{ software_deployment: { status: string; output_values: Record<string, unknown> | null } }>().software_deployment;
}

test("TEMP_URL_SIGNAL: a signal on an earlier action's temp URL is refused (409 ERR_SIGNAL_STALE) and the new action waits for its own", async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app, { inputs: [{ name: 'x' }] }), server.id, {
      signal_transport: 'TEMP_URL_SIGNAL',
      input_values: { x: '1' },
    });
    const first = await signalUrl(app, server.id);
    // The operator starts a new action before the agent's signal for the first one arrived.
    const updated = await app.inject({
      method: 'PUT',
      url: `/v1/default/software_deployments/${id}`,
      headers: ADMIN,
      payload: { input_values: { x: '2' } },
    });
    assert.equal(updated.statusCode, 200, updated.body);
    const second = await signalUrl(app, server.id);
    assert.notEqual(second, first, 'each action gets its own temp URL');

    const stale = await injectUrl(app, 'PUT', first, { deploy_status_code: 0, deploy_stdout: 'result of x=1' });
    assert.equal(stale.statusCode, 409, stale.body);
    assert.equal(errorCode(stale), 'ERR_SIGNAL_STALE');
    const untouched = await deployment(app, id);
    assert.equal(untouched.status, 'IN_PROGRESS');
    assert.equal(untouched.output_values, null);

    // The first action's path with the second's signature: the path is signed.
    const spliced = `${first.split('?', 1)[0]}?${second.split('?')[1]}`;
    const forged = await injectUrl(app, 'PUT', spliced, { deploy_status_code: 0 });
    assert.equal(forged.statusCode, 403, forged.body);
    assert.equal(errorCode(forged), 'ERR_SIGNED_URL_INVALID');

    const current = await injectUrl(app, 'PUT', second, { deploy_status_code: 0, deploy_stdout: 'result of x=2' });
    assert.equal(current.statusCode, 201, current.body);
    const after = await deployment(app, id);
    assert.equal(after.status, 'COMPLETE');
    assert.equal(after.output_values?.deploy_stdout, 'result of x=2');
  } finally {
    await done();
  }
});

test('TEMP_URL_SIGNAL: an action URL takes only a deployment signal body; an expired or foreign one is a 403; URLs issued without an action still work', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id, { signal_transport: 'TEMP_URL_SIGNAL' });
    const url = await signalUrl(app, server.id);
    const bad = await injectUrl(app, 'PUT', url, { deploy_stdout: 42 });
    assert.equal(bad.statusCode, 400, bad.body);
    assert.equal(errorCode(bad), 'ERR_SIGNAL_INVALID');

    // Signed with the right key, for a time that has passed.
    const path = new URL(url).pathname;
    const accessKey = path.split('/')[6]!;
    const expires = Math.floor(Date.now() / 1000) - 60;
    const sig = signTempUrl({ method: 'PUT', path, expires, key: app.services.secrets.tempUrlKey(accessKey) });
    const expired = await injectUrl(app, 'PUT', `http://127.0.0.1:9${path}?temp_url_sig=${sig}&temp_url_expires=${expires}`, {
      deploy_status_code: 0,
    });
    assert.equal(expired.statusCode, 403, expired.body);
    assert.equal(errorCode(expired), 'ERR_SIGNED_URL_EXPIRED');
    assert.equal((await deployment(app, id)).status, 'IN_PROGRESS');

    // A URL of the form issued before URLs named their action (agents may still hold one) signals the current action.
    const legacy = tempUrl(
      { publicUrl: 'http://127.0.0.1:9', secrets: app.services.secrets },
      'PUT',
      'default',
      TEMP_URL_CONTAINERS.signals,
      accessKey,
    );
    const signalled = await injectUrl(app, 'PUT', legacy, { deploy_status_code: 0 });
    assert.equal(signalled.statusCode, 201, signalled.body);
    assert.equal((await deployment(app, id)).status, 'COMPLETE');
  } finally {
    await done();
  }
});
