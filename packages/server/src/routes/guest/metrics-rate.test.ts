// Samples are kept by count across the whole table: a VM sending in a loop must not push the other
// VMs' samples out (their alarms would see no data). Past its burst, a server's puts are a 429
// ERR_RATE_LIMITED with Retry-After that stores nothing; other servers are not held back.
// Real HTTP on 127.0.0.1, a real store.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { registerServer, testApp } from '../../test-support.ts';
import { SAMPLE_BURST, SAMPLE_RATE_PER_SECOND } from '../../domain/metrics.ts';

test('metrics: a server past its burst of samples gets 429 ERR_RATE_LIMITED with Retry-After and stores nothing; another server is not held back', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
    const [a, b] = [await registerServer(app, 'a'), await registerServer(app, 'b')];
    const put = (auth: Record<string, string>, metric: string, count: number) =>
      fetch(`${base}/v1/guest/metrics`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ samples: Array.from({ length: count }, (_, i) => ({ metric_name: metric, value: i })) }),
      });
    const stored = async (serverId: string) =>
      Number(
        (
          await app.services.store.reader
            .selectFrom('metric_samples')
            .select((eb) => eb.fn.countAll<number>().as('count'))
            .where('server_id', '=', serverId)
            .executeTakeFirstOrThrow()
        ).count,
      );
    assert.equal((await put(b.auth, 'Load', 1)).status, 200);
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 30 && !refused; i++) {
      const reply = await put(a.auth, 'Flood', 100);
      statuses.push(reply.status);
      if (reply.status === 429) refused = reply;
      else await reply.text();
    }
    assert.ok(refused, `no 429 in ${statuses.join()}`);
    // The burst (give or take what refilled while the loop ran) went through, nothing after it.
    assert.ok(statuses.length - 1 >= SAMPLE_BURST / 100 && statuses.length - 1 <= SAMPLE_BURST / 100 + 1, statuses.join());
    const body = (await refused.json()) as { error: { code: string } };
    assert.equal(body.error.code, 'ERR_RATE_LIMITED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= Math.ceil(100 / SAMPLE_RATE_PER_SECOND), String(retryAfter));
    assert.equal(await stored(a.id), (statuses.length - 1) * 100);
    // B sends as before: its own bucket.
    assert.equal((await put(b.auth, 'Load', 100)).status, 200);
    assert.equal(await stored(b.id), 101);
  } finally {
    await done();
  }
});
