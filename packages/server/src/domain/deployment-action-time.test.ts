// A CFN_SIGNAL URL carries the start of its action in whole seconds (Heat's Timestamp), and that is
// all that tells one action's URL from the next one's: two actions started in the same second must
// still get different URLs, or the earlier action's signal (queued in an agent's outbox) settles the later.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Store } from '../store/store.ts';
import { ADMIN, createConfig, injectUrl, registerServer, testApp } from '../test-support.ts';

/** Makes every write of `store` run at the instant `now()` returns (the writes of one test, in one second). */
function pinNow(store: Store, now: () => string): void {
  const write = store.write.bind(store);
  store.write = (unit) => write((ctx) => unit({ ...ctx, now: now() }));
}

async function signalUrl(app: FastifyInstance, serverId: string): Promise<{ url: string; creationTime: string }> {
  const metadata = await app.inject({ url: `/v1/default/software_deployments/metadata/${serverId}`, headers: ADMIN });
  const derived = metadata.json<{ metadata: Array<{ creation_time: string; inputs: Array<{ name: string; value: string }> }> }>()
    .metadata[0];
  const url = derived?.inputs.find((input) => input.name === 'deploy_signal_id')?.value;
  assert.ok(derived && url, metadata.body);
  return { url, creationTime: derived.creation_time };
}

const update = (app: FastifyInstance, id: string, payload: Record<string, unknown>) =>
  app.inject({ method: 'PUT', url: `/v1/default/software_deployments/${id}`, headers: ADMIN, payload });

test('actions started within one second get CFN_SIGNAL URLs of their own: an earlier one settles nothing', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const vm = await registerServer(app);
    const config = await createConfig(app);
    // Every write from here on lands within the second 2030-01-01T00:00:00Z, 100 ms apart.
    let ms = 0;
    pinNow(app.services.store, () => new Date(Date.UTC(2030, 0, 1) + (ms += 100)).toISOString());
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: config, server_id: vm.id, signal_transport: 'CFN_SIGNAL' },
    });
    assert.equal(created.statusCode, 200, created.body);
    const { id } = created.json<{ software_deployment: { id: string } }>().software_deployment;
    const create = await signalUrl(app, vm.id);
    assert.equal(create.creationTime, '2030-01-01T00:00:00Z');

    assert.equal((await update(app, id, { action: 'UPDATE' })).statusCode, 200);
    const first = await signalUrl(app, vm.id);
    assert.equal((await update(app, id, { input_values: { n: 2 } })).statusCode, 200);
    const second = await signalUrl(app, vm.id);
    // Each action a second after the one before: what its derived config shows, and its URL's Timestamp.
    assert.deepEqual([first.creationTime, second.creationTime], ['2030-01-01T00:00:01Z', '2030-01-01T00:00:02Z']);
    assert.match(second.url, /Timestamp=2030-01-01T00%3A00%3A02Z/);
    assert.equal(new Set([create.url, first.url, second.url]).size, 3, 'each action has a URL of its own');

    for (const [action, url] of [
      ['CREATE', create.url],
      ['UPDATE', first.url],
    ]) {
      const stale = await injectUrl(app, 'POST', url!, { deploy_status_code: 0, result: action }, { 'content-type': 'application/json' });
      assert.equal(stale.statusCode, 409, `${action}: ${stale.body}`);
      assert.match(stale.body, /ERR_SIGNAL_STALE/);
    }
    const current = await injectUrl(
      app,
      'POST',
      second.url,
      { deploy_status_code: 0, result: 'latest' },
      { 'content-type': 'application/json' },
    );
    assert.equal(current.statusCode, 200, current.body);
    const shown = (await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN })).json<{
      software_deployment: { status: string; output_values: Record<string, unknown> };
    }>().software_deployment;
    assert.equal(shown.status, 'COMPLETE');
    assert.equal(shown.output_values.result, 'latest');

    // An update that starts no action (a status) leaves the action's time, and so its URL, alone.
    assert.equal((await update(app, id, { status_reason: 'noted' })).statusCode, 200);
    assert.equal((await signalUrl(app, vm.id)).url, second.url);
  } finally {
    await done();
  }
});
