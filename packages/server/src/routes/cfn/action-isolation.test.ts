import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { Store } from '../../store/store.ts';
import { ADMIN, createConfig, injectUrl, registerServer, testApp } from '../../test-support.ts';

/** Runs `interloper` once, just before the next prepared write (a signal's) is queued, so it commits first. */
function beforePreparedWrite(store: Store, interloper: () => Promise<LightMyRequestResponse>): () => LightMyRequestResponse {
  const writePrepared = store.writePrepared.bind(store);
  let reply: LightMyRequestResponse | undefined;
  store.writePrepared = (async (...args: Parameters<Store['writePrepared']>) => {
    store.writePrepared = writePrepared;
    reply = await interloper();
    return writePrepared(...args);
  }) as Store['writePrepared'];
  return () => {
    assert.ok(reply, 'the interloper did not run');
    return reply;
  };
}

async function deployment(app: FastifyInstance, id: string) {
  const reply = await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
  return reply.json<{ software_deployment: { action: string; status: string; output_values: unknown } }>().software_deployment;
}

test('a CFN_SIGNAL URL checked against its action settles nothing when a new action starts before the signal commits', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const vm = await registerServer(app);
    const config = await createConfig(app);
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: config, server_id: vm.id, signal_transport: 'CFN_SIGNAL' },
    });
    const { id } = created.json<{ software_deployment: { id: string } }>().software_deployment;
    const metadata = await app.inject({ url: `/v1/default/software_deployments/metadata/${vm.id}`, headers: ADMIN });
    const inputs = metadata.json<{ metadata: Array<{ inputs: Array<{ name: string; value: string }> }> }>().metadata[0]?.inputs ?? [];
    const url = inputs.find((input) => input.name === 'deploy_signal_id')?.value;
    assert.ok(url, metadata.body);
    // The operator starts a new action after the URL's action was checked, before its signal is written.
    const update = beforePreparedWrite(app.services.store, () =>
      app.inject({ method: 'PUT', url: `/v1/default/software_deployments/${id}`, headers: ADMIN, payload: { action: 'UPDATE' } }),
    );
    const stale = await injectUrl(
      app,
      'POST',
      url,
      { deploy_status_code: 0, result: 'from CREATE' },
      { 'content-type': 'application/json' },
    );
    assert.equal(update().statusCode, 200, update().body);
    assert.equal(stale.statusCode, 409, stale.body);
    assert.match(stale.body, /ERR_SIGNAL_STALE/);
    const after = await deployment(app, id);
    assert.deepEqual([after.action, after.status], ['UPDATE', 'IN_PROGRESS'], 'the signal of CREATE must not settle UPDATE');
  } finally {
    await done();
  }
});
