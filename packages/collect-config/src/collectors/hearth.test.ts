import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { createFileSecretStore } from '@hearth/agent-kit';
import { contextFor, fakeServer, optionsFor, tempDir } from '../test-support/fixtures.ts';
import { createHearthCollector } from './hearth.ts';

/** A stand-in for hearth-server's GET /v1/guest/metadata: strong ETag, If-None-Match + ?wait=N holds. */
async function metadataServer(token: string) {
  let version = 1;
  let document: Record<string, unknown> = { deployments: [], 'os-collect-config': {} };
  const held = new Set<{ etag: string; response: ServerResponse }>();
  const etag = () => `"v${version}"`;
  const reply = (response: ServerResponse, status: number) => {
    response.writeHead(status, { etag: etag(), 'content-type': 'application/json' });
    response.end(status === 200 ? JSON.stringify(document) : undefined);
  };
  const server = await fakeServer((request, response) => {
    if (request.headers.authorization !== `Bearer ${token}`) {
      response.writeHead(401);
      return void response.end('{"error":"unauthorized"}');
    }
    const wait = Number(new URL(request.url, 'http://x').searchParams.get('wait') ?? 0);
    if (request.headers['if-none-match'] !== etag()) return reply(response, 200);
    if (wait === 0) return reply(response, 304);
    const entry = { etag: etag(), response };
    held.add(entry);
    setTimeout(() => {
      if (held.delete(entry)) reply(response, 304);
    }, wait * 1000).unref();
  });
  return {
    ...server,
    change(next: Record<string, unknown>) {
      version++;
      document = next;
      for (const entry of held) reply(entry.response, 200);
      held.clear();
    },
    /** Ends every held request at once with a 304 and `headers`, as hearth-server does when it stops. */
    endHeld(headers: Record<string, string>) {
      for (const entry of held) {
        entry.response.writeHead(304, { etag: entry.etag, ...headers });
        entry.response.end();
      }
      held.clear();
    },
    /** How many requests are held now. */
    heldCount: () => held.size,
  };
}

/** Polls `probe` every 5 ms until it is true; false after `ms`. */
async function eventually(probe: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return true;
}

/**
 * How late a `ms` timer started now fires in this process. A watcher's own sleep started at the same
 * moment is about as late: bounds add it instead of a fixed allowance for a loaded machine.
 */
function timerLateness(ms: number): Promise<number> {
  const started = Date.now();
  return new Promise((resolve) => setTimeout(() => resolve(Math.max(0, Date.now() - started - ms)), ms));
}

/** Watch options against `url` with a 30 s polling interval. */
function watchOptions(url: string, extraArgv: string[] = []) {
  return optionsFor([
    '--hearth-metadata-url',
    url,
    '--hearth-access-key-id',
    'AK',
    '--hearth-secret-access-key',
    'S',
    '--polling-interval',
    '30',
    ...extraArgv,
  ]);
}

test('hearth: Bearer credential, then a conditional GET; the document is exploded', async () => {
  const server = await metadataServer('AK:SECRET');
  try {
    const collector = createHearthCollector();
    const argv = ['--hearth-metadata-url', `${server.url}/v1/guest/metadata`, '--hearth-access-key-id', 'AK'];
    const ctx = contextFor(optionsFor([...argv, '--hearth-secret-access-key', 'SECRET']));
    assert.deepEqual(await collector.collect(ctx), { kind: 'data', outputs: [['hearth', { deployments: [], 'os-collect-config': {} }]] });
    server.change({ deployments: [{ name: 'x', group: 'os-apply-config', config: { a: 1 } }] });
    const outcome = await collector.collect(ctx);
    assert.deepEqual(outcome.kind === 'data' ? outcome.outputs.map(([key]) => key) : outcome, ['hearth', 'x']);
    assert.equal(server.requests[1]!.headers['if-none-match'], '"v1"');
    assert.equal((await collector.collect(ctx)).kind, 'data', 'a 304 still yields the document it has');
    assert.equal(server.requests.at(-1)!.headers['if-none-match'], '"v2"');

    const denied = contextFor(optionsFor([...argv, '--hearth-secret-access-key', 'WRONG']));
    const refused = await createHearthCollector().collect(denied);
    assert.equal(refused.kind, 'unavailable');
    assert.match((refused as { reason: string }).reason, /answered 401/);
    assert.equal((await createHearthCollector().collect(contextFor(optionsFor(argv)))).kind, 'not-configured');
  } finally {
    await server.close();
  }
});

test('hearth: watch long-polls with If-None-Match and ?wait, and calls back as soon as the document changes', async () => {
  const server = await metadataServer('AK:S');
  const stop = new AbortController();
  try {
    const collector = createHearthCollector();
    const options = optionsFor([
      '--hearth-metadata-url',
      `${server.url}/v1/guest/metadata`,
      '--hearth-access-key-id',
      'AK',
      '--hearth-secret-access-key',
      'S',
      '--hearth-wait',
      '30',
    ]);
    const changes: number[] = [];
    const watching = collector.watch({ ...contextFor(options), signal: stop.signal }, () => changes.push(Date.now()));
    while (changes.length < 1) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(collector.watchState().state, 'waiting');
    const held = server.requests.at(-1)!;
    assert.match(held.url, /\?wait=30$/);
    assert.equal(held.headers['if-none-match'], '"v1"');
    const changedAt = Date.now();
    server.change({ deployments: [], new: true });
    while (changes.length < 2) await new Promise((resolve) => setTimeout(resolve, 2));
    assert.ok(changes[1]! - changedAt < 500, `noticed in ${changes[1]! - changedAt} ms`);
    assert.equal(collector.watchState().etag, '"v2"');
    stop.abort();
    await watching;
    assert.equal(collector.watchState().state, 'idle');
  } finally {
    stop.abort();
    await server.close();
  }
});

test('hearth: a failing long-poll backs off and records the error instead of spinning', async () => {
  const server = await metadataServer('AK:S');
  const stop = new AbortController();
  try {
    const collector = createHearthCollector();
    const options = optionsFor([
      '--hearth-metadata-url',
      `${server.url}/m`,
      '--hearth-access-key-id',
      'AK',
      '--hearth-secret-access-key',
      'bad',
    ]);
    const ctx = contextFor(options);
    const watching = collector.watch({ ...ctx, signal: stop.signal }, () => assert.fail('no change expected'));
    // Waits for the failure itself (a loaded machine may take longer than any fixed sleep to get there).
    assert.ok(await eventually(() => collector.watchState().lastError !== undefined, 10_000), 'the refused attempt was recorded');
    assert.equal(server.requests.length, 1, 'one attempt, then a 1 s backoff');
    assert.equal(collector.watchState().state, 'backoff');
    assert.match(collector.watchState().lastError ?? '', /401/);
    assert.ok(ctx.log.lines.some((line) => line.level === 'warn' && /long-poll failed/.test(line.message)));
    // Equal jitter keeps at least half the 1 s backoff: the retry is not sent at once.
    assert.ok(await eventually(() => server.requests.length >= 2, 10_000), 'retried after the backoff');
    const gap = server.requests[1]!.at - server.requests[0]!.at;
    assert.ok(gap >= 490, `retried ${gap} ms after the refusal`);
    stop.abort();
    await watching;
  } finally {
    await server.close();
  }
});

/**
 * Watches against a server that never holds until it has had `before` requests, then `ms` longer; returns
 * how many requests it got and the callbacks made. Counting from the requests, not from the start, keeps
 * a slow start on a loaded machine from looking like a watcher that sent too few.
 */
async function watchBriefly(reply: (response: ServerResponse, call: number) => void, extraArgv: string[], before: number, ms: number) {
  let calls = 0;
  const server = await fakeServer((_request, response) => reply(response, ++calls));
  const stop = new AbortController();
  try {
    const collector = createHearthCollector();
    const options = optionsFor([
      '--hearth-metadata-url',
      `${server.url}/m`,
      '--hearth-access-key-id',
      'AK',
      '--hearth-secret-access-key',
      'S',
      '--polling-interval',
      '30',
      ...extraArgv,
    ]);
    let changes = 0;
    const watching = collector.watch({ ...contextFor(options), signal: stop.signal }, () => changes++);
    assert.ok(await eventually(() => server.requests.length >= before, 10_000), `${server.requests.length} of ${before} requests`);
    await new Promise((resolve) => setTimeout(resolve, ms));
    stop.abort();
    await watching;
    return { requests: server.requests.length, changes, state: collector.watchState() };
  } finally {
    stop.abort();
    await server.close();
  }
}

test('hearth: a server (or proxy) that answers held requests at once is polled at the interval, not in a loop', async () => {
  const notHeld = await watchBriefly(
    (response, call) => {
      response.writeHead(call === 1 ? 200 : 304, { etag: '"v1"', 'content-type': 'application/json' });
      response.end(call === 1 ? '{"deployments":[]}' : undefined);
    },
    [],
    2,
    700,
  );
  // The early 304 is followed by a reconnect 1-3 s later, never within 0.7 s.
  assert.deepEqual({ requests: notHeld.requests, changes: notHeld.changes }, { requests: 2, changes: 1 });
  assert.equal(notHeld.state.etag, '"v1"');

  const newEtagEveryTime = await watchBriefly(
    (response, call) => {
      response.writeHead(200, { etag: `"v${call}"`, 'content-type': 'application/json' });
      response.end('{"deployments":[]}');
    },
    [],
    1,
    700,
  );
  assert.ok(newEtagEveryTime.requests <= 3, `${newEtagEveryTime.requests} requests in 0.7 s after the first`);

  const noWait = await watchBriefly(
    (response, call) => {
      response.writeHead(call === 1 ? 200 : 304, { etag: '"v1"', 'content-type': 'application/json' });
      response.end(call === 1 ? '{}' : undefined);
    },
    ['--hearth-wait', '0'],
    1,
    700,
  );
  assert.equal(noWait.requests, 1, 'wait = 0: one plain request per polling interval');
});

test('hearth: a failed reply is logged as its coded error, and a body echoing the request never shows the secret', async () => {
  const server = await fakeServer((request, response) => {
    if (request.url?.startsWith('/coded')) {
      response.writeHead(503, { 'content-type': 'application/json' });
      return void response.end('{"code":503,"error":{"code":"ERR_STORE_UNAVAILABLE","message":"The store is not available."}}');
    }
    // A proxy that echoes what it got, headers included.
    response.writeHead(502, { 'content-type': 'text/plain' });
    response.end(`bad gateway; request was: ${JSON.stringify(request.headers)}`);
  });
  try {
    const argv = ['--hearth-access-key-id', 'AK', '--hearth-secret-access-key', 'TOPSECRET123'];
    const echoed = await createHearthCollector().collect(contextFor(optionsFor(['--hearth-metadata-url', `${server.url}/echo`, ...argv])));
    assert.equal(echoed.kind, 'unavailable');
    const reason = (echoed as { reason: string }).reason;
    assert.match(reason, /answered 502: bad gateway; request was: .*Bearer AK:\*\*\*/);
    assert.doesNotMatch(reason, /TOPSECRET123/);
    const coded = await createHearthCollector().collect(contextFor(optionsFor(['--hearth-metadata-url', `${server.url}/coded`, ...argv])));
    assert.match((coded as { reason: string }).reason, /answered 503: ERR_STORE_UNAVAILABLE: The store is not available\.$/);
  } finally {
    await server.close();
  }
});

test('hearth: watch with a secret store keeps retrying while the secret is missing, and uses it once stored (no restart)', async () => {
  const server = await metadataServer('AK:STORED-S3CR3T');
  const stop = new AbortController();
  try {
    const root = tempDir();
    const storePath = join(root, 'credentials.json');
    const options = optionsFor(
      [
        '--hearth-metadata-url',
        `${server.url}/v1/guest/metadata`,
        '--hearth-access-key-id',
        'AK',
        '--hearth-secret-store',
        'file',
        '--hearth-secret-store-path',
        storePath,
      ],
      root,
    );
    const ctx = contextFor(options);
    const collector = createHearthCollector();
    let changes = 0;
    const watching = collector.watch({ ...ctx, signal: stop.signal }, () => changes++);
    assert.ok(await eventually(() => collector.watchState().lastError !== undefined, 10_000), 'the missing secret was recorded');
    assert.equal(server.requests.length, 0, 'nothing is sent without the secret');
    assert.equal(collector.watchState().state, 'backoff');
    assert.match(collector.watchState().lastError ?? '', /^no secret "hearth\/AK" in .*; store it with: hearth-agent secret --path /);
    await createFileSecretStore(storePath).set('hearth/AK', 'STORED-S3CR3T');
    const deadline = Date.now() + 5000;
    while (changes === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(changes, 1, 'the stored secret was picked up by the running watch');
    assert.equal(server.requests[0]!.headers.authorization, 'Bearer AK:STORED-S3CR3T');
    assert.ok(!JSON.stringify(ctx.log.lines).includes('STORED-S3CR3T'));
    stop.abort();
    await watching;
  } finally {
    stop.abort();
    await server.close();
  }
});

// A server that stops ends its held long-polls at once with a 304 (hearth-server adds `Retry-After: 1`
// and `Connection: close`). That is no proxy declining to hold: the agent must be back within
// seconds, not after the polling interval, or every restart delays changes by up to 30 s.
for (const [name, headers] of [
  ['Retry-After: 1, as hearth-server marks it', { 'retry-after': '1', connection: 'close' }],
  ['unmarked, as a server without the header', {}],
] as const) {
  test(`hearth: a held request ended at once (${name}) is asked again within 1-3 s, not after the polling interval`, async (t) => {
    const server = await metadataServer('AK:S');
    const stop = new AbortController();
    try {
      // random() = 0.5: the reconnect is 1 s (the least hold, and Retry-After: 1) plus half the 2 s jitter.
      const collector = createHearthCollector(() => 0.5);
      let changes = 0;
      const watching = collector.watch(
        { ...contextFor(watchOptions(`${server.url}/m`, ['--hearth-wait', '30'])), signal: stop.signal },
        () => changes++,
      );
      assert.ok(await eventually(() => changes === 1 && server.heldCount() === 1, 5000), 'held after the first document');
      const before = server.requests.length;
      await new Promise((resolve) => setTimeout(resolve, 100));
      const endedAt = Date.now();
      const late = timerLateness(2000);
      server.endHeld(headers);
      // Well short of the 30 s polling interval the bug waited for.
      assert.ok(await eventually(() => server.heldCount() === 1, 15_000), 'asked again within 15 s');
      const gap = Date.now() - endedAt;
      const lateMs = await late;
      t.diagnostic(`asked again ${gap} ms after the early 304; a 2 s timer was ${lateMs} ms late`);
      assert.ok(
        gap >= 1990 && gap < 2000 + lateMs + 1000,
        `asked again ${gap} ms after the early 304 (2 s reconnect, timers ${lateMs} ms late)`,
      );
      assert.equal(server.requests.length, before + 1, 'one request, no spin');
      server.change({ deployments: [], after: 'restart' });
      assert.ok(await eventually(() => changes === 2, 1000), 'the next change arrives through the new held request');
      stop.abort();
      await watching;
    } finally {
      stop.abort();
      await server.close();
    }
  });
}

test('hearth: a wall clock stepped back two years during a held request (NTP) does not stop the long-poll', async (t) => {
  const server = await metadataServer('AK:S');
  const stop = new AbortController();
  const realNow = Date.now;
  t.after(async () => {
    Date.now = realNow;
    stop.abort();
    await server.close();
  });
  const changes: number[] = [];
  const watching = createHearthCollector().watch(
    { ...contextFor(watchOptions(`${server.url}/m`, ['--hearth-wait', '30'])), signal: stop.signal },
    () => changes.push(changes.length),
  );
  assert.ok(await eventually(() => changes.length === 1 && server.heldCount() === 1, 10_000), 'the first request was not held');
  // held past the shortest hold, so the answer below is a real change, not a server that does not hold
  await new Promise((resolve) => setTimeout(resolve, 1100));
  Date.now = () => realNow() - 2 * 365 * 24 * 3600_000;
  server.change({ deployments: [], new: true });
  assert.ok(await eventually(() => changes.length === 2, 5000), 'the change was not noticed');
  assert.ok(await eventually(() => server.heldCount() === 1, 3000), 'not asking again after the change: the watch stalled');
  Date.now = realNow;
  stop.abort();
  await watching;
});

test('hearth: a server that answers every held request at once is asked twice more, jittered, then polled at the interval', async (t) => {
  const server = await fakeServer((request, response) => {
    const conditional = request.headers['if-none-match'] === '"v1"';
    response.writeHead(conditional ? 304 : 200, { etag: '"v1"', 'content-type': 'application/json' });
    response.end(conditional ? undefined : '{"deployments":[]}');
  });
  const stop = new AbortController();
  try {
    // random() = 0: each early answer is followed by the shortest reconnect, 1 s.
    const collector = createHearthCollector(() => 0);
    const watching = collector.watch({ ...contextFor(watchOptions(`${server.url}/m`)), signal: stop.signal }, () => undefined);
    // The document, an early 304, then two more 1 s apart; the third in a row means nothing holds: 30 s.
    // Waits for the four instead of counting what came in a fixed time, which a loaded machine stretches.
    assert.ok(await eventually(() => server.requests.length >= 4, 15_000), `${server.requests.length} requests in 15 s`);
    const gaps = server.requests.slice(1).map((request, index) => request.at - server.requests[index]!.at);
    t.diagnostic(`gaps between requests: ${gaps.join(', ')} ms`);
    for (const gap of gaps.slice(1)) assert.ok(gap >= 990, `reconnected ${gap} ms after an early 304, not 1 s`);
    // Two more 1 s reconnects would fit in this wait: none means the watcher went to the 30 s interval.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    const seen = server.requests.length;
    stop.abort();
    await watching;
    assert.equal(seen, 4, `${seen} requests: the fourth was not followed by the 30 s interval`);
  } finally {
    stop.abort();
    await server.close();
  }
});

test('hearth: a fleet refused together retries apart (jittered backoff), within half to all of the backoff', async (t) => {
  const closed = await fakeServer(() => undefined);
  await closed.close(); // its port now refuses connections
  const fleet = Array.from({ length: 12 }, () => ({ stop: new AbortController(), attempts: [] as number[] }));
  try {
    // Each watcher its own draw, 0 to 1 across the fleet: the backoff of 1 s with equal jitter is then
    // 500 to 1000 ms, known per watcher, instead of whatever Math.random gives.
    const draw = (index: number) => index / (fleet.length - 1);
    const late = timerLateness(1000);
    const watches = fleet.map(({ stop, attempts }, index) => {
      const ctx = contextFor(watchOptions(`${closed.url}/m`));
      const http: typeof ctx.http = (options) => {
        attempts.push(Date.now());
        return ctx.http(options);
      };
      const random = () => draw(index);
      return createHearthCollector(random).watch({ ...ctx, http, signal: stop.signal }, () => assert.fail('no change expected'));
    });
    assert.ok(await eventually(() => fleet.every(({ attempts }) => attempts.length >= 2), 15_000), 'every watcher retried');
    for (const { stop } of fleet) stop.abort();
    await Promise.all(watches);
    const lateMs = await late;
    const gaps = fleet.map(({ attempts }) => attempts[1]! - attempts[0]!);
    t.diagnostic(`gaps ${gaps.join(', ')} ms; a 1 s timer was ${lateMs} ms late`);
    gaps.forEach((gap, index) => {
      const expected = Math.round(500 + draw(index) * 500);
      // Above: the refused connect and the timers' lateness on this machine now, plus a fixed 300 ms.
      assert.ok(gap >= expected - 10 && gap < expected + lateMs + 300, `watcher ${index} retried after ${gap} ms, expected ${expected}`);
    });
    const spread = Math.max(...gaps) - Math.min(...gaps);
    assert.ok(spread > 100, `retries spread over ${spread} ms only: ${gaps.join(', ')}`);
  } finally {
    for (const { stop } of fleet) stop.abort();
  }
});

/** Sends `body` as a 200 with ETag in `parts` pieces `everyMs` apart; with `stall`, the last piece never comes and the connection stays open. */
function trickleReply(response: ServerResponse, body: string, options: { parts: number; everyMs: number; stall?: boolean }): void {
  response.writeHead(200, { etag: '"v1"', 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
  const size = Math.ceil(body.length / options.parts);
  let part = 0;
  const timer = setInterval(() => {
    if (options.stall && part === options.parts - 1) return void clearInterval(timer);
    response.write(body.slice(part * size, (part + 1) * size));
    part += 1;
    if (part === options.parts) {
      clearInterval(timer);
      response.end();
    }
  }, options.everyMs);
  response.on('close', () => clearInterval(timer));
}

test('hearth: a big document that takes longer than [hearth] timeout to arrive, but keeps arriving, is collected', async () => {
  // ~256 KB over about 2 s with a 1 s timeout: a 60 MB document over a 50 Mbit/s link, scaled down. (The server runs
  // in this process: 1 s against 100 ms parts leaves 0.9 s for the process not to run on a loaded CI box.)
  const document = { deployments: [], filler: 'x'.repeat(256 * 1024) };
  const server = await fakeServer((_request, response) => trickleReply(response, JSON.stringify(document), { parts: 20, everyMs: 100 }));
  try {
    const options = watchOptions(`${server.url}/v1/guest/metadata`, ['--hearth-timeout', '1']);
    const outcome = await createHearthCollector().collect(contextFor(options));
    assert.equal(outcome.kind, 'data', JSON.stringify(outcome).slice(0, 300));
    assert.deepEqual(outcome.kind === 'data' ? outcome.outputs : undefined, [['hearth', document]]);
  } finally {
    await server.close();
  }
});

test('hearth: a held request may take the wait, but a reply whose body stalls is given up within [hearth] timeout', async () => {
  const document = JSON.stringify({ deployments: [], filler: 'x'.repeat(4096) });
  let stalledAt = 0;
  const server = await fakeServer((request, response) => {
    if (request.headers['if-none-match'] === undefined) return void response.writeHead(200, { etag: '"v1"' }).end(document);
    // The first held request is held past the timeout (as hearth-server holds it up to `wait`), then answered 304.
    if (stalledAt === 0 && server.requests.length === 2)
      return void setTimeout(() => response.writeHead(304, { etag: '"v1"' }).end(), 1200);
    if (stalledAt === 0) stalledAt = Date.now();
    trickleReply(response, document, { parts: 4, everyMs: 30, stall: true });
  });
  const stop = new AbortController();
  const collector = createHearthCollector(() => 0);
  try {
    const options = watchOptions(`${server.url}/v1/guest/metadata`, ['--hearth-timeout', '0.3', '--hearth-wait', '30']);
    const watching = collector.watch({ ...contextFor(options), signal: stop.signal }, () => undefined);
    assert.ok(await eventually(() => collector.watchState().lastError !== undefined, 6000), 'the stalled reply was never given up');
    const noticedMs = Date.now() - stalledAt;
    assert.ok(stalledAt > 0 && noticedMs < 2500, `given up after ${noticedMs} ms, not within the 0.3 s timeout`);
    assert.match(collector.watchState().lastError!, /the body stalled: no data for 300 ms/);
    assert.match(server.requests[1]!.url, /\?wait=30$/);
    stop.abort();
    await watching;
  } finally {
    stop.abort();
    await server.close();
  }
});
