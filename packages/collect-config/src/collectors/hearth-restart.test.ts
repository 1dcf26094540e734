// The hearth collector against a real hearth-server process on 127.0.0.1 that stops (SIGTERM) and
// starts again on the same port and data dir: changes must reach the agent within seconds of the
// server being back, even when the stop ended a long-poll that had only just started.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, removeServerData, spawnServer, type ServerProcess } from '../../../../test/helpers/server.ts';
import { operatorApi } from '../../../../test/conformance/clients.ts';
import { contextFor, optionsFor } from '../test-support/fixtures.ts';
import { createHearthCollector } from './hearth.ts';

/** Polls `probe` every 10 ms until it is true; false after `ms`. */
async function eventually(probe: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

async function stopServer(server: ServerProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
}

test('hearth: after hearth-server restarts, a new deployment reaches the watching agent within seconds', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-restart-'));
  const port = await freePort();
  let server: ServerProcess | undefined = await spawnServer(dataDir, port);
  const stop = new AbortController();
  try {
    const created = await operatorApi(server).createServer({ name: 'vm1', software_config_transport: 'HEARTH_LONG_POLL' });
    const options = optionsFor([
      '--hearth-metadata-url',
      `${server.url}/v1/guest/metadata`,
      '--hearth-access-key-id',
      created.credential.access_key_id,
      '--hearth-secret-access-key',
      created.credential.secret_access_key,
      '--hearth-wait',
      '30',
      '--polling-interval',
      '30',
    ]);
    const ctx = contextFor(options);
    const heldStarts: number[] = [];
    // When each held request that the server answered was sent: one sent while the restarted server
    // listens but before spawnServer has seen it ready counts too (it may be the one that brings the deployment).
    const heldAnswered: number[] = [];
    const http: typeof ctx.http = (request) => {
      if (!request.url.includes('wait=')) return ctx.http(request);
      const sentAt = Date.now();
      heldStarts.push(sentAt);
      return ctx.http(request).then((response) => {
        heldAnswered.push(sentAt);
        return response;
      });
    };
    const changes: number[] = [];
    // A fixed jitter: with Math.random an early retry drawn short and a later one drawn long can wait
    // up to twice as long as the server has been down, which a slow restart on a loaded machine turned
    // into a flaky bound. With any fixed draw each wait is shorter than the time already waited.
    const watching = createHearthCollector(() => 0.5).watch({ ...ctx, http, signal: stop.signal }, () => changes.push(Date.now()));
    assert.ok(await eventually(() => changes.length === 1 && heldStarts.length === 1, 10_000), 'the first document, then a held request');

    // Stop while that held request is young: its 304 comes at once, as from a proxy that does not hold.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stoppedAt = Date.now();
    await stopServer(server);
    server = undefined;
    server = await spawnServer(dataDir, port);
    const backAt = Date.now();
    const deployedAt = Date.now();
    await operatorApi(server).deployScript(created.server.id);
    const downMs = backAt - stoppedAt;
    assert.ok(
      await eventually(() => changes.length === 2, 15_000 + downMs),
      `the deployment reached the agent within ${15_000 + downMs} ms`,
    );
    const latency = changes[1]! - deployedAt;
    const reconnect = Math.max(0, (heldAnswered.find((at) => at >= stoppedAt) ?? Infinity) - backAt);
    // The reconnect is 2 s after the early 304, then error backoffs of 0.75, 1.5, 3 s ... while the server is
    // down: each shorter than the server has been down so far (a loaded machine restarts it slowly).
    const bound = 6000 + downMs;
    assert.ok(latency < bound, `the deployment reached the agent ${latency} ms after it was created (polling interval 30 s)`);
    assert.ok(reconnect < bound, `the agent held a request again ${reconnect} ms after the server was back`);
    t.diagnostic(`server down ${downMs} ms; deployment to agent: ${latency} ms; server back to a held request: ${reconnect} ms`);
    stop.abort();
    await watching;
  } finally {
    stop.abort();
    if (server) await stopServer(server);
    await removeServerData(dataDir);
  }
});
