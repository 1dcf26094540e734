// The hearth collector against a real hearth-server process on 127.0.0.1 that refuses a fifth waiting
// long-poll of one credential (429 ERR_RATE_LIMITED, Retry-After: 5): the agent waits as asked, says so
// once, and long-polls again (and gets the next change) as soon as a slot is free.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, removeServerData, spawnServer, type ServerProcess } from '../../../../test/helpers/server.ts';
import { operatorApi } from '../../../../test/conformance/clients.ts';
import { contextFor, optionsFor } from '../test-support/fixtures.ts';
import { createHearthCollector, type HearthCollector } from './hearth.ts';

/** Polls `probe` every 10 ms until it is true; false after `ms`. */
async function eventually(probe: () => boolean, ms: number): Promise<boolean> {
  const end = performance.now() + ms;
  while (!probe()) {
    if (performance.now() > end) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

test('hearth: a long-poll refused with 429 waits the Retry-After, warns once, and long-polls once a slot is free', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-429-'));
  const server: ServerProcess = await spawnServer(dataDir, await freePort());
  const stops: AbortController[] = [];
  t.after(async () => {
    for (const stop of stops) stop.abort();
    server.child.kill('SIGTERM');
    await server.exited;
    await removeServerData(dataDir);
  });
  const created = await operatorApi(server).createServer({ name: 'vm1', software_config_transport: 'HEARTH_LONG_POLL' });
  const options = optionsFor([
    '--hearth-metadata-url',
    `${server.url}/v1/guest/metadata`,
    '--hearth-access-key-id',
    created.credential.access_key_id,
    '--hearth-secret-access-key',
    created.credential.secret_access_key,
    '--hearth-wait',
    '55',
    '--polling-interval',
    '30',
  ]);
  const watch = (collector: HearthCollector, ctx = contextFor(options), http = ctx.http): Promise<void> => {
    const stop = new AbortController();
    stops.push(stop);
    return collector.watch({ ...ctx, http, signal: stop.signal }, () => undefined);
  };

  // Four agents of the one credential hold their long-polls: the server's cap.
  const holders = Array.from({ length: 4 }, () => createHearthCollector());
  const holding = holders.map((collector) => watch(collector));
  const held = () => holders.every((c) => c.watchState().etag !== undefined && c.watchState().state === 'waiting');
  assert.ok(await eventually(held, 15_000), 'four long-polls held');
  await new Promise((resolve) => setTimeout(resolve, 300));

  const ctx = contextFor(options);
  // Each request as it is sent; its status once answered (a held one is answered at the change).
  const polls: Array<{ at: number; status: number | undefined; held: boolean }> = [];
  const http: typeof ctx.http = async (request) => {
    const poll = { at: performance.now(), status: undefined as number | undefined, held: request.url.includes('wait=') };
    polls.push(poll);
    const response = await ctx.http(request);
    poll.status = response.status;
    return response;
  };
  const fifth = createHearthCollector(() => 0);
  const changes: number[] = [];
  const stop = new AbortController();
  stops.push(stop);
  const watching = fifth.watch({ ...ctx, http, signal: stop.signal }, () => changes.push(performance.now()));
  const refused = () => polls.filter((poll) => poll.status === 429);
  assert.ok(await eventually(() => refused().length >= 2, 15_000), `two refusals: ${JSON.stringify(polls)}`);
  const [first, second] = refused();
  assert.ok(second!.at - first!.at >= 4_900, `retried ${Math.round(second!.at - first!.at)} ms after a 429 with Retry-After: 5`);
  const warned = ctx.log.lines.filter((line) => line.level === 'warn');
  assert.equal(warned.length, 1, `one warning for the episode: ${JSON.stringify(warned)}`);
  assert.match(JSON.stringify(warned[0]), /429/);
  assert.equal(fifth.watchState().state, 'backoff');

  // One holder goes: the fifth is let in at its next try, holds, and gets the next change at once.
  stops[0]!.abort();
  await holding[0];
  const accepted = polls.length;
  const waitingAgain = () => polls.length > accepted && polls.at(-1)!.held && polls.at(-1)!.status === undefined;
  assert.ok(await eventually(waitingAgain, 10_000), `not let in again: ${JSON.stringify(polls)}`);
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.ok(waitingAgain(), `not held: ${JSON.stringify(polls)}`);
  const changesBefore = changes.length;
  await operatorApi(server).deployScript(created.server.id);
  assert.ok(await eventually(() => changes.length > changesBefore, 5_000), 'the change reached the fifth agent');
  assert.ok(
    polls.some((poll, index) => index >= accepted && poll.held && poll.status === 200),
    'by a held request',
  );
  assert.ok(ctx.log.lines.some((line) => line.level === 'info' && /accepted again/.test(line.message)));
  assert.equal(ctx.log.lines.filter((line) => line.level === 'warn').length, 1);
  stop.abort();
  await watching;
  for (const s of stops) s.abort();
  await Promise.all(holding);
});
