// A server seen answering again: signals queued while it was down go out at once, not after their backoff.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { markServerAnswered } from '@hearth/agent-kit';
import { attemptEntry, type AttemptContext } from './attempt.ts';
import { drainOutbox } from './drain.ts';
import { Outbox, type OutboxEntry } from './outbox.ts';
import { queueSignal } from './queue.ts';
import { deploymentInfo } from './route.ts';
import { deploymentWith, memoryLogger, startFake, type FakeReply, type RecordedRequest } from './test-support.ts';

/** A backoff that waits its whole ceiling: 10 minutes after every failed attempt. */
const SLOW = { backoff: { baseMs: 600_000, capMs: 600_000 }, random: () => 0.999 };

function setup(): { ctx: AttemptContext; logger: ReturnType<typeof memoryLogger> } {
  const outbox = new Outbox(join(mkdtempSync(join(tmpdir(), 'hcn-answered-')), 'outbox'));
  const logger = memoryLogger();
  return { logger, ctx: { outbox, log: logger.log, timeoutMs: 5000, ...SLOW } };
}

let deployments = 0;
/** Queues a HEARTH_SIGNAL signal of a deployment of its own, named `name` (also its body's `n`), to `base`. */
async function queue(ctx: AttemptContext, base: string, name: string): Promise<OutboxEntry> {
  deployments += 1;
  const id = `c0ffee00-0000-4000-8000-${String(deployments).padStart(12, '0')}`;
  const inputs = {
    deploy_signal_transport: 'HEARTH_SIGNAL',
    deploy_signal_id: `${base}/v1/guest/deployments/${id}/signal?token=capability-token`,
    deploy_signal_verb: 'POST',
  };
  const entry = await queueSignal(deploymentInfo(deploymentWith(inputs, { id, name })), { n: name }, { outbox: ctx.outbox, log: ctx.log });
  assert.ok(entry);
  return entry;
}

const nameOf = (request: RecordedRequest) => (JSON.parse(request.body.toString()) as { n: string }).n;

/** A loopback server answering each signal as `answer(name)` says at the time. */
async function server(answer: (name: string) => FakeReply) {
  return startFake((request) => answer(nameOf(request)));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a signal another process delivers makes the running drain retry at once what waits out its backoff for that server', async () => {
  let up = false;
  const fake = await server((name) => {
    if (name === 'throttled') return { status: 503, headers: { 'retry-after': '600' } };
    return up ? { status: 200, body: '{}' } : { status: 503 };
  });
  const gone = await startFake(() => ({ status: 200 }));
  await gone.close(); // a second origin, down
  const stop = new AbortController();
  try {
    const { ctx, logger } = setup();
    // Queued while the server was down: each tried once, now waiting 10 minutes.
    const waiting = await queue(ctx, fake.url, 'waiting');
    const throttled = await queue(ctx, fake.url, 'throttled');
    const elsewhere = await queue(ctx, gone.url, 'elsewhere');
    for (const entry of [waiting, throttled, elsewhere]) assert.equal((await attemptEntry(entry.id, ctx)).state, 'queued');
    const draining = drainOutbox(ctx, { mode: 'follow', stop: stop.signal, rescanMs: 60_000 });
    await sleep(200);
    assert.deepEqual(fake.requests.map(nameOf), ['waiting', 'throttled'], 'nothing retried before its time');

    // The server is back: heat-config-notify, another process on the same outbox, delivers a new signal.
    up = true;
    const other = { ...ctx, outbox: new Outbox(ctx.outbox.dir) };
    const fresh = await queue(other, fake.url, 'fresh');
    const answeredAt = Date.now();
    // The running drain sees the new entry too: whichever process takes it first delivers it.
    const state = (await attemptEntry(fresh.id, other)).state;
    assert.ok(['delivered', 'gone', 'busy'].includes(state), state);
    for (let i = 0; i < 250 && !fake.requests.some((r, k) => k > 2 && nameOf(r) === 'waiting'); i++) await sleep(20);
    const retried = fake.requests.findLast((r) => nameOf(r) === 'waiting');
    assert.ok(retried && fake.requests.filter((r) => nameOf(r) === 'waiting').length === 2, 'the waiting signal was sent again');
    assert.ok(retried.at - answeredAt < 5000, `sent again ${retried.at - answeredAt} ms after the server answered`);
    assert.ok(
      logger.lines.some(
        (line) => line.msg === 'its server answered another signal since: trying this one again now' && line.entry === waiting.id,
      ),
    );

    // The server's Retry-After still holds, and another server's signal keeps its backoff.
    await sleep(300);
    assert.deepEqual(fake.requests.map(nameOf).sort(), ['fresh', 'throttled', 'waiting', 'waiting']);
    assert.deepEqual(
      ctx.outbox
        .list()
        .entries.map((entry) => entry.id)
        .sort(),
      [throttled.id, elsewhere.id].sort(),
    );
    stop.abort();
    const summary = await draining;
    assert.equal(summary.delivered, state === 'delivered' ? 1 : 2, 'the waiting one, and the fresh one unless the other process sent it');
    assert.equal(summary.queued, 2);
    // The mark is not an entry, and holds nothing secret.
    const marks = readdirSync(ctx.outbox.dir).filter((name) => name.startsWith('.answered-'));
    assert.equal(marks.length, 1);
  } finally {
    stop.abort();
    await fake.close();
  }
});

test('one drain pass: a delivery makes the entries it skipped before due, and the drain ends empty without waiting their backoff', async () => {
  let up = false;
  const fake = await server(() => (up ? { status: 200, body: '{}' } : { status: 503 }));
  // Bounded: on a drain that waited the backoff, this stop ends it with the entry still queued.
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 8000);
  try {
    const { ctx } = setup();
    const older = await queue(ctx, fake.url, 'older');
    assert.equal((await attemptEntry(older.id, ctx)).state, 'queued');
    up = true;
    await sleep(5); // listed after `older`, which is not due
    await queue(ctx, fake.url, 'newer');
    const started = Date.now();
    const summary = await drainOutbox(ctx, { mode: 'empty', stop: stop.signal });
    assert.deepEqual(summary, { delivered: 2, rejected: 0, expired: 0, queued: 0, unreadable: 0 });
    assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
    assert.deepEqual(fake.requests.map(nameOf), ['older', 'newer', 'older']);
  } finally {
    clearTimeout(timer);
    await fake.close();
  }
});

test('an entry still failing after the server answered others waits its backoff again: one extra attempt per answer, no more', async () => {
  // The server answers the other signals but fails this one (a proxy in front, a handler that 503s on it).
  const fake = await server((name) => (name === 'stuck' ? { status: 503 } : { status: 200, body: '{}' }));
  const stop = new AbortController();
  try {
    const { ctx } = setup();
    const stuck = await queue(ctx, fake.url, 'stuck');
    assert.equal((await attemptEntry(stuck.id, ctx)).state, 'queued');
    await sleep(5);
    await queue(ctx, fake.url, 'first');
    await queue(ctx, fake.url, 'second');
    const draining = drainOutbox(ctx, { mode: 'follow', stop: stop.signal, rescanMs: 60_000 });
    for (let i = 0; i < 250 && fake.requests.length < 4; i++) await sleep(20);
    await sleep(1000);
    stop.abort();
    const summary = await draining;
    assert.equal(summary.delivered, 2);
    const stuckTries = fake.requests.filter((r) => nameOf(r) === 'stuck').length;
    // Its first attempt, then once after the pass's answers (the two answers came before its retry): not a loop.
    assert.equal(stuckTries, 2, fake.requests.map(nameOf).join(' '));
    assert.equal(ctx.outbox.read(stuck.id)?.attempts, 2);
  } finally {
    stop.abort();
    await fake.close();
  }
});

test('a poll os-collect-config got answered (agent-kit markServerAnswered) pulls forward the signals for that server too', async () => {
  let up = false;
  const fake = await server(() => (up ? { status: 200, body: '{}' } : { status: 503 }));
  const stop = new AbortController();
  try {
    const { ctx } = setup();
    const waiting = await queue(ctx, fake.url, 'waiting');
    assert.equal((await attemptEntry(waiting.id, ctx)).state, 'queued');
    const draining = drainOutbox(ctx, { mode: 'follow', stop: stop.signal, rescanMs: 60_000 });
    await sleep(200);
    up = true;
    const answeredAt = Date.now();
    markServerAnswered(ctx.outbox.dir, new URL(fake.url).origin, answeredAt);
    for (let i = 0; i < 250 && fake.requests.length < 2; i++) await sleep(20);
    assert.equal(fake.requests.length, 2, 'sent again once the collector saw the server answer');
    assert.ok(fake.requests[1]!.at - answeredAt < 5000, `${fake.requests[1]!.at - answeredAt} ms`);
    stop.abort();
    assert.equal((await draining).delivered, 1);
    assert.deepEqual(readdirSync(ctx.outbox.dir), [], 'the emptied outbox keeps no mark');
  } finally {
    stop.abort();
    await fake.close();
  }
});
