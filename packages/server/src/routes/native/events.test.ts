import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { testApp } from '../../test-support.ts';
import { resourceEvent } from '../../domain/events.ts';

/** Writes `count` events of about `size` bytes each (a few hundred per transaction). */
async function writeEvents(app: Awaited<ReturnType<typeof testApp>>['app'], count: number, size: number): Promise<void> {
  const resource = { project_id: 'default', resource_type: 'server', resource_id: 'backlog', server_id: null };
  for (let start = 0; start < count; start += 200) {
    await app.services.store.write(async ({ event }) => {
      for (let i = start; i < Math.min(count, start + 200); i++) event(resourceEvent(resource, 'test.backlog', `${i} ${'x'.repeat(size)}`));
    });
  }
}

test('an event stream whose client stops reading holds one page, not the whole backlog, and then resumes without a gap', async () => {
  const { app, done } = await testApp();
  const serverSockets: Socket[] = [];
  let client: Socket | undefined;
  try {
    const eventCount = 6000;
    await writeEvents(app, eventCount, 4000); // ~24 MB of backlog
    app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    client = connect({ host: '127.0.0.1', port });
    await new Promise((resolve) => client!.once('connect', resolve));
    client.write('GET /v1/default/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: admin-secret\r\n\r\n');
    client.pause();
    // Let the server write what it will while the client reads nothing.
    let queued = -1;
    for (let i = 0; i < 40; i++) {
      await sleep(100);
      const now = serverSockets.reduce((sum, s) => sum + s.writableLength, 0);
      if (now === queued && now > 0) break;
      queued = now;
    }
    // One page is 500 events of ~4 KB (~2 MB); the whole backlog would be ~24 MB less what the kernel took.
    assert.ok(queued < 4 * 1024 * 1024, `the server queued ${queued} bytes for a client that reads nothing`);

    // The client reads again: every event arrives once, in order.
    let text = '';
    const ids: number[] = [];
    client.setEncoding('utf8');
    client.on('data', (chunk: string) => {
      text += chunk;
      for (let cut = text.indexOf('\n\n'); cut >= 0; cut = text.indexOf('\n\n')) {
        const id = /^id: (\d+)$/m.exec(text.slice(0, cut));
        if (id) ids.push(Number(id[1]));
        text = text.slice(cut + 2);
      }
    });
    client.resume();
    for (let i = 0; i < 300 && ids.length < eventCount; i++) await sleep(100);
    assert.equal(ids.length, eventCount);
    assert.deepEqual(
      ids,
      ids.map((_, i) => ids[0]! + i),
    );
  } finally {
    client?.destroy();
    await done();
  }
});

test('an event stream whose client never reads again does not hold up closing the app', async () => {
  const { app, done } = await testApp();
  let client: Socket | undefined;
  try {
    await writeEvents(app, 3000, 4000);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    client = connect({ host: '127.0.0.1', port });
    await new Promise((resolve) => client!.once('connect', resolve));
    client.write('GET /v1/default/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: admin-secret\r\n\r\n');
    client.pause();
    await sleep(500);
    const closed = await Promise.race([app.close().then(() => true), sleep(5000).then(() => false)]);
    assert.ok(closed, 'app.close() waited on a stream whose client reads nothing');
  } finally {
    client?.destroy();
    await done();
  }
});
