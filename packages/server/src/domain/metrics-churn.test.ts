// hearth-server runs for months while servers come and go (autoscaling). The token bucket that rates
// each server's samples stayed after the server was deleted, one per server that ever sent a sample,
// until SENDERS_TRACKED (100 000) pushed the oldest out. Real HTTP on 127.0.0.1, a real store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { ADMIN, registerServer, testApp } from '../test-support.ts';
import { SAMPLE_BURST } from './metrics.ts';

test('servers that sent samples and were deleted leave no sending rate behind; a live server keeps its own', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const put = async (auth: Record<string, string>, count: number) => {
      const reply = await fetch(`${base}/v1/guest/metrics`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ samples: Array.from({ length: count }, (_, i) => ({ metric_name: 'Load', value: i })) }),
      });
      await reply.arrayBuffer();
      return reply.status;
    };
    // A live server that has used up its burst.
    const flooder = await registerServer(app, 'flooder');
    let status = 200;
    for (let i = 0; i < 30 && status === 200; i++) status = await put(flooder.auth, 100);
    assert.equal(status, 429, 'the flooder is held back');
    const { metricSamples } = app.services;
    const tracked = metricSamples.trackedSenders;
    for (let i = 0; i < 30; i++) {
      const vm = await registerServer(app, `vm${i}`);
      assert.equal(await put(vm.auth, 1), 200);
      const deleted = await fetch(`${base}/v1/default/servers/${vm.id}`, { method: 'DELETE', headers: ADMIN });
      assert.equal(deleted.status, 204);
    }
    assert.equal(metricSamples.trackedSenders, tracked, 'sending rates tracked after 30 servers sent samples and went');
    // A fresh bucket would take a whole burst again; the kept one only what refilled meanwhile.
    let taken = 0;
    while (taken < SAMPLE_BURST / 100 && (await put(flooder.auth, 100)) === 200) taken++;
    assert.ok(taken < SAMPLE_BURST / 100, `the live server's bucket was kept: ${taken} puts of 100 taken, not a whole burst`);
  } finally {
    await done();
  }
});
