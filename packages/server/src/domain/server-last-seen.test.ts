import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LastSeenWriter } from './server-last-seen.ts';
import { registerServer, testApp } from '../test-support.ts';

// An agent's call is noted in memory and written in a batch; a batch whose write fails (a full disk,
// the database down) stays pending and is written by the next flush.
test('last-seen times are written in batches; a failed write keeps the batch pending for the next flush', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const { store } = app.services;
    const server = await registerServer(app);
    const stored = async () =>
      (await store.reader.selectFrom('servers').select('last_seen_at').where('id', '=', server.id).executeTakeFirstOrThrow()).last_seen_at;
    // No timer fires within the test: each flush is the test's.
    const writer = new LastSeenWriter(store, () => undefined, 60_000);
    writer.touch(server.id);
    const pending = writer.lastSeen(server.id, null);
    assert.ok(pending, 'a call is seen before it is written');
    assert.equal(await stored(), null);

    const write = store.write.bind(store);
    (store.write as unknown) = () => Promise.reject(new Error('disk full'));
    try {
      await assert.rejects(writer.flush(), /disk full/);
    } finally {
      (store.write as unknown) = write;
    }
    assert.equal(writer.lastSeen(server.id, null), pending, 'the failed batch is still pending');
    await writer.flush();
    assert.equal(await stored(), pending);
    assert.equal(writer.lastSeen(server.id, 'stored'), 'stored', 'nothing pending once written');

    writer.touch(server.id);
    writer.forget(server.id);
    assert.equal(writer.lastSeen(server.id, null), null, 'a deleted server has nothing pending');
  } finally {
    await done();
  }
});
