// Agents whose long-polls drop (a network blip, a VM rebooted) before the server has read their
// credential and document: each such poll waited its whole `wait` for a client long gone, holding one
// of its credential's MAX_WAITING_PER_CREDENTIAL slots (the agent, back at once, got 429s), its feed
// listeners, and an entry the app's close waited on. Real HTTP on 127.0.0.1. The window is a store read
// that yields to the event loop: PostgreSQL's (the PostgreSQL pass shows it); SQLite's reads never yield.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { registerServer, testApp } from '../../test-support.ts';
import { MAX_WAITING_PER_CREDENTIAL } from './index.ts';

/** A long-poll sent on a connection of its own and dropped as soon as it has left: the agent went away. */
function droppedPoll(port: number, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/guest/metadata?wait=30', headers, agent: false });
    req.on('error', () => undefined);
    req.on('close', () => resolve());
    req.end(() => req.destroy());
  });
}

/** A long-poll's status, or 'held' when it is still waiting after `ms` (then ended). */
function pollFor(port: number, headers: Record<string, string>, ms: number): Promise<number | 'held'> {
  return new Promise((resolve) => {
    const req = httpRequest({
      host: '127.0.0.1',
      port,
      path: '/v1/guest/metadata?wait=30',
      headers,
      agent: false,
      signal: AbortSignal.timeout(ms),
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', () => resolve('held'));
    req.end();
  });
}

test('long-polls dropped before they began waiting free their slot, their listeners and the close at once', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    const vm = await registerServer(app);
    const etag = (await app.inject({ url: '/v1/guest/metadata', headers: vm.auth })).headers.etag as string;
    const headers = { ...vm.auth, 'if-none-match': etag };
    const { feed } = app.services;
    const listeners = feed.listenerCount();
    for (let i = 0; i < 3 * MAX_WAITING_PER_CREDENTIAL; i++) {
      // As after a resync of the feed: the credential and the document are read from the store again.
      feed.wakeAll();
      await droppedPoll(port, headers);
    }
    let now = feed.listenerCount();
    for (let i = 0; i < 50 && now !== listeners; i++) {
      await sleep(50);
      now = feed.listenerCount();
    }
    assert.equal(now, listeners, 'no dropped poll still listens for a change');
    assert.equal(await pollFor(port, headers, 500), 'held', "the agent's next long-poll waits: no slot is held by a dropped one");
    // The app's close first ends every long wait and waits for their replies to close: none is left.
    const ended = await Promise.race([app.longWaits!.endAll().then(() => 'ended'), sleep(3_000).then(() => 'still waiting')]);
    assert.equal(ended, 'ended', 'no dropped poll is left for the close to wait on');
  } finally {
    await done();
  }
});
