// The outbox and its delivery against a loopback node:http server that fails, then succeeds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { attemptEntry, type AttemptContext } from './attempt.ts';
import { drainOutbox } from './drain.ts';
import { Outbox, type OutboxEntry } from './outbox.ts';
import { queueSignal } from './queue.ts';
import { deploymentInfo } from './route.ts';
import { deploymentWith, memoryLogger, startFake, type FakeServer } from './test-support.ts';

const FAST = { baseMs: 50, capMs: 200 };

function setup(): { outbox: Outbox; logger: ReturnType<typeof memoryLogger>; ctx: AttemptContext } {
  const outbox = new Outbox(join(mkdtempSync(join(tmpdir(), 'hcn-outbox-')), 'outbox'));
  const logger = memoryLogger();
  return { outbox, logger, ctx: { outbox, log: logger.log, backoff: FAST, timeoutMs: 5000 } };
}

function hearthInputs(base: string): Record<string, unknown> {
  return {
    deploy_signal_transport: 'HEARTH_SIGNAL',
    deploy_signal_id: `${base}/v1/guest/deployments/d1/signal?token=capability-token`,
    deploy_signal_verb: 'POST',
  };
}

async function queue(
  ctx: AttemptContext,
  inputs: Record<string, unknown>,
  data: Record<string, unknown>,
  extra = {},
): Promise<OutboxEntry> {
  const entry = await queueSignal(deploymentInfo(deploymentWith(inputs, extra)), data, { outbox: ctx.outbox, log: ctx.log });
  assert.ok(entry);
  return entry;
}

/** A URL on a port nothing listens on (a fake started and stopped), and that port. */
async function deadPort(): Promise<{ url: string; port: number }> {
  const fake = await startFake(() => ({ status: 200 }));
  await fake.close();
  return { url: fake.url, port: Number(new URL(fake.url).port) };
}

test('fails twice with 503, then delivers: same body and Idempotency-Key each time, waits within the backoff bounds', async () => {
  const fake = await startFake((_r, i) =>
    i < 2 ? { status: 503, body: '{"error":{"message":"busy"}}' } : { status: 200, body: '{"status":"COMPLETE"}' },
  );
  try {
    const { outbox, logger, ctx } = setup();
    const entry = await queue(ctx, hearthInputs(fake.url), { deploy_stdout: 'hi', deploy_status_code: 0 });
    const summary = await drainOutbox({ ...ctx, random: () => 0.99 });
    assert.deepEqual(summary, { delivered: 1, rejected: 0, expired: 0, queued: 0, unreadable: 0 });
    assert.equal(fake.requests.length, 3);
    for (const request of fake.requests) {
      assert.equal(request.method, 'POST');
      assert.equal(request.url, '/v1/guest/deployments/d1/signal?token=capability-token');
      assert.equal(request.headers['idempotency-key'], entry.id);
      assert.equal(request.headers['content-type'], 'application/json');
      assert.equal(request.body.toString(), '{"deploy_stdout":"hi","deploy_status_code":0}');
    }
    const gaps = [fake.requests[1]!.at - fake.requests[0]!.at, fake.requests[2]!.at - fake.requests[1]!.at];
    // random 0.99: 49 ms after the first failure (ceiling 50), 99 ms after the second (ceiling 100).
    assert.ok(gaps[0]! >= 45 && gaps[0]! < 2000, `first wait ${gaps[0]} ms`);
    assert.ok(gaps[1]! >= 95 && gaps[1]! < 2000, `second wait ${gaps[1]} ms`);
    assert.deepEqual(outbox.list().entries, []);
    const warned = logger.lines.filter((line) => line.msg === 'signal not delivered; queued for another attempt');
    assert.deepEqual(
      warned.map((line) => line.reason),
      ['the signal URL answered 503: busy', 'the signal URL answered 503: busy'],
    );
    assert.doesNotMatch(logger.text(), /capability-token/);
  } finally {
    await fake.close();
  }
});

test('408 and 429 are retried; Retry-After sets the least wait', async () => {
  const fake = await startFake((_r, i) =>
    i === 0
      ? { status: 408 }
      : i === 1
        ? { status: 429, headers: { 'retry-after': '1' }, body: '{"error":{"message":"slow down"}}' }
        : { status: 204 },
  );
  try {
    const { ctx } = setup();
    const entry = await queue(ctx, { deploy_signal_id: `${fake.url}/cfn`, deploy_signal_verb: 'POST' }, {});
    const first = await attemptEntry(entry.id, { ...ctx, random: () => 0 });
    assert.equal(first.state, 'queued');
    // A fixed clock: the wait is read off exactly, however long saving the entry took on a loaded disk.
    const clock = Date.now();
    const second = await attemptEntry(entry.id, { ...ctx, now: () => clock, random: () => 0, backoff: { baseMs: 50, capMs: 60_000 } });
    assert.equal(second.state, 'queued');
    assert.equal(second.state === 'queued' && second.nextAttemptAt - clock, 1000, 'Retry-After: 1 s, over a backoff of 0 ms');
    assert.equal((await attemptEntry(entry.id, ctx)).state, 'delivered');
    assert.equal(fake.requests.length, 3);
  } finally {
    await fake.close();
  }
});

for (const status of [400, 403, 409]) {
  test(`${status} is not retried: dropped at once, logged with the server's reason`, async () => {
    const fake = await startFake(() => ({
      status,
      body: JSON.stringify({ code: status, error: { code: 'ERR_X', message: `no way (${status})` } }),
    }));
    try {
      const { outbox, logger, ctx } = setup();
      await queue(ctx, hearthInputs(fake.url), { deploy_status_code: 1 });
      const summary = await drainOutbox(ctx);
      assert.deepEqual(summary, { delivered: 0, rejected: 1, expired: 0, queued: 0, unreadable: 0 });
      assert.equal(fake.requests.length, 1);
      assert.deepEqual(outbox.list().entries, []);
      const line = logger.lines.find((l) => l.msg === 'signal rejected; it will not be sent again');
      assert.equal(line?.reason, `the signal URL answered ${status}: no way (${status})`);
      assert.equal(line?.level, 'error');
    } finally {
      await fake.close();
    }
  });
}

test('a CFN-style XML error body gives its <Message> as the reason', async () => {
  const fake = await startFake(() => ({
    status: 403,
    body: '<ErrorResponse><Error><Message>Signature mismatch</Message></Error></ErrorResponse>',
  }));
  try {
    const { ctx } = setup();
    const entry = await queue(ctx, { deploy_signal_id: `${fake.url}/v1/signal/arn`, deploy_signal_verb: 'POST' }, {});
    const result = await attemptEntry(entry.id, ctx);
    assert.deepEqual(result, { state: 'rejected', status: 403, reason: 'the signal URL answered 403: Signature mismatch' });
  } finally {
    await fake.close();
  }
});

test('state on disk survives a restart: attempts and next attempt time are kept and honoured', async () => {
  const dead = await deadPort();
  const { outbox, ctx } = setup();
  const entry = await queue(ctx, hearthInputs(dead.url), { deploy_stdout: 'x' });
  assert.equal(statSync(outbox.dir).mode & 0o777, 0o700);
  assert.equal(statSync(outbox.pathOf(entry.id)).mode & 0o777, 0o600);
  const before = Date.now();
  const slow = { ...ctx, random: () => 0.5, backoff: { baseMs: 60_000, capMs: 300_000 } };
  const first = await attemptEntry(entry.id, slow);
  assert.equal(first.state, 'queued');
  const stored = JSON.parse(readFileSync(outbox.pathOf(entry.id), 'utf8')) as OutboxEntry;
  assert.equal(stored.attempts, 1);
  assert.match(stored.lastError ?? '', /ECONNREFUSED|connect/);
  const wait = Date.parse(stored.nextAttemptAt) - before;
  assert.ok(wait >= 29_000 && wait <= 31_000 + (Date.now() - before), `next attempt in ${wait} ms (half of the 60 s ceiling)`);
  assert.equal(statSync(outbox.pathOf(entry.id)).mode & 0o777, 0o600);
  assert.deepEqual(
    readdirSync(outbox.dir).filter((name) => !name.endsWith('.json')),
    [],
    'no lock or temp file left',
  );

  // "Restart": a new process (new Outbox object) on the same directory, the server back on its port.
  const fake = await startFake(() => ({ status: 200, body: '{}' }), dead.port);
  try {
    const restarted = { ...slow, outbox: new Outbox(outbox.dir) };
    const early = await drainOutbox(restarted, { mode: 'once' });
    assert.deepEqual(early, { delivered: 0, rejected: 0, expired: 0, queued: 1, unreadable: 0 }, 'not due yet: left alone');
    assert.equal(fake.requests.length, 0);
    const later = await drainOutbox({ ...restarted, now: () => Date.parse(stored.nextAttemptAt) + 1 }, { mode: 'once' });
    assert.deepEqual(later, { delivered: 1, rejected: 0, expired: 0, queued: 0, unreadable: 0 });
    assert.equal(fake.requests.length, 1);
    assert.equal(fake.requests[0]!.headers['idempotency-key'], entry.id, 'the same key after the restart');
  } finally {
    await fake.close();
  }
});

test('a clock that went back does not strand an entry: an attempt time beyond the cap is due now', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  try {
    const { outbox, ctx } = setup();
    const entry = await queue(ctx, hearthInputs(fake.url), {});
    await outbox.save({ ...entry, attempts: 3, nextAttemptAt: new Date(Date.now() + 86_400_000).toISOString() });
    assert.equal((await drainOutbox(ctx, { mode: 'once' })).delivered, 1);
  } finally {
    await fake.close();
  }
});

test('past the deadline a retried entry is dropped with a log line; a first attempt is still made', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  try {
    const { outbox, logger, ctx } = setup();
    const longAgo = '2020-01-01T00:00:00Z';
    const entry = await queue(
      ctx,
      { ...hearthInputs(fake.url), deploy_timeout: 60 },
      { deploy_stdout: 'late' },
      { creation_time: longAgo },
    );
    assert.equal(entry.deadline, '2020-01-01T00:01:00.000Z');
    // Queued here back then as well: by this VM's clock too it is long past retrying.
    await outbox.save({ ...entry, attempts: 2, createdAt: longAgo });
    const summary = await drainOutbox(ctx);
    assert.deepEqual(summary, { delivered: 0, rejected: 0, expired: 1, queued: 0, unreadable: 0 });
    assert.equal(fake.requests.length, 0);
    assert.ok(logger.lines.some((l) => l.msg === 'dropping a signal that was never acknowledged: the deployment deadline has passed'));

    const fresh = await queue(
      ctx,
      { ...hearthInputs(fake.url), deploy_timeout: 60 },
      { deploy_stdout: 'first' },
      { creation_time: longAgo },
    );
    assert.equal((await attemptEntry(fresh.id, ctx)).state, 'delivered');
  } finally {
    await fake.close();
  }
});

test('a signal that missed its deadline while the server was down is still retried for --late-ms, then dropped', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  try {
    const { outbox, ctx } = setup();
    // The deadline passed 10 s ago, after two attempts failed (the server was down).
    const creation = new Date(Date.now() - 70_000).toISOString();
    const entry = await queue(
      ctx,
      { ...hearthInputs(fake.url), deploy_timeout: 60 },
      { deploy_stdout: 'late' },
      { creation_time: creation },
    );
    await outbox.save({ ...entry, attempts: 2 });
    assert.deepEqual(
      await drainOutbox(ctx),
      { delivered: 1, rejected: 0, expired: 0, queued: 0, unreadable: 0 },
      'within the default hour: sent',
    );
    assert.equal(fake.requests.length, 1);

    const again = await queue(
      ctx,
      { ...hearthInputs(fake.url), deploy_timeout: 60 },
      { deploy_stdout: 'later' },
      { creation_time: creation },
    );
    await outbox.save({ ...again, attempts: 2, createdAt: creation });
    assert.deepEqual(
      await drainOutbox({ ...ctx, lateMs: 5_000 }),
      { delivered: 0, rejected: 0, expired: 1, queued: 0, unreadable: 0 },
      'past --late-ms: dropped',
    );
    assert.equal(fake.requests.length, 1);
  } finally {
    await fake.close();
  }
});

test('a VM clock far ahead retries for timeout + --late-ms by its own count; a step back restarts the count, never past it', async () => {
  const fake = await startFake(() => ({ status: 503 }));
  try {
    const { outbox, logger, ctx } = setup();
    const created = Date.parse('2026-01-01T00:00:00Z');
    let clock = created + 2 * 365 * 86_400_000; // booted 2 years ahead
    const at = { ...ctx, now: () => clock, lateMs: 1_000 };
    const entry = await queueSignal(
      deploymentInfo(deploymentWith({ ...hearthInputs(fake.url), deploy_timeout: 60 }, { creation_time: '2026-01-01T00:00:00Z' })),
      {},
      { outbox, log: ctx.log, now: () => clock },
    );
    assert.ok(entry);
    assert.equal(entry.timeoutMs, 60_000);
    assert.equal((await attemptEntry(entry.id, at)).state, 'queued');
    clock += 30_000; // by the server's clock two years late, by this VM's 30 s: still tried
    assert.equal((await attemptEntry(entry.id, at)).state, 'queued');
    assert.equal(fake.requests.length, 2);
    clock += 31_001; // 61.001 s queued here: past timeout + late by both clocks
    assert.equal((await attemptEntry(entry.id, at)).state, 'expired');
    assert.equal(fake.requests.length, 2);

    // NTP steps the clock back 2 years after the signal was queued ahead: the count restarts at the step.
    clock = created + 2 * 365 * 86_400_000;
    const ahead = await queueSignal(
      deploymentInfo(deploymentWith({ ...hearthInputs(fake.url), deploy_timeout: 60 }, { creation_time: '2026-01-01T00:00:00Z' })),
      { again: true },
      { outbox, log: ctx.log, now: () => clock },
    );
    assert.ok(ahead);
    assert.equal((await attemptEntry(ahead.id, at)).state, 'queued');
    clock = created + 10_000;
    assert.equal((await attemptEntry(ahead.id, at)).state, 'queued');
    assert.equal(outbox.read(ahead.id)?.createdAt, new Date(clock).toISOString(), 'queueing time moved back to the present');
    clock += 61_001;
    assert.equal((await attemptEntry(ahead.id, at)).state, 'expired', 'not kept until the clock catches up (2 years)');
    assert.ok(logger.lines.some((l) => l.msg === 'dropping a signal that was never acknowledged: the deployment deadline has passed'));
  } finally {
    await fake.close();
  }
});

test('without a timeout input the deadline is creation_time + 7 days', async () => {
  const { ctx } = setup();
  const entry = await queue(ctx, hearthInputs('http://127.0.0.1:9'), {}, { creation_time: '2024-05-01T00:00:00Z' });
  assert.equal(entry.deadline, '2024-05-08T00:00:00.000Z');
});

test('the same signal queued twice is one entry; a different one is another', async () => {
  const { outbox, ctx } = setup();
  const a = await queue(ctx, hearthInputs('http://127.0.0.1:9'), { deploy_stdout: 'a' });
  const again = await queue(ctx, hearthInputs('http://127.0.0.1:9'), { deploy_stdout: 'a' });
  const b = await queue(ctx, hearthInputs('http://127.0.0.1:9'), { deploy_stdout: 'b' });
  assert.equal(again.id, a.id);
  assert.notEqual(b.id, a.id);
  assert.equal(outbox.list().entries.length, 2);
});

test('an unreadable entry is reported once and left in place; the others are delivered', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  try {
    const { outbox, logger, ctx } = setup();
    await queue(ctx, hearthInputs(fake.url), {});
    writeFileSync(join(outbox.dir, 'broken.json'), '{"version":');
    assert.equal((await drainOutbox(ctx, { mode: 'once' })).delivered, 1);
    assert.equal(logger.lines.filter((l) => l.msg === 'cannot read an outbox entry; leaving it for an operator').length, 1);
    assert.deepEqual(readdirSync(outbox.dir), ['broken.json']);
  } finally {
    await fake.close();
  }
});

test('a temp file left by a writer killed mid-write is removed by the next drain; a live writer keeps its own', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  try {
    const { outbox, ctx } = setup();
    const entry = await queue(ctx, hearthInputs(fake.url), {});
    const dead = spawnSync(process.execPath, ['-e', '']).pid; // a pid that has exited
    const crashed = `.${entry.id}.json.${dead}.0123456789ab.tmp`;
    const writing = `.${entry.id}.json.${process.pid}.ba9876543210.tmp`;
    for (const name of [crashed, writing]) writeFileSync(join(outbox.dir, name), JSON.stringify(entry), { mode: 0o600 });
    assert.equal((await drainOutbox(ctx, { mode: 'once' })).delivered, 1);
    assert.deepEqual(readdirSync(outbox.dir), [writing]);
  } finally {
    await fake.close();
  }
});

test('an entry locked by another live process is skipped, not sent twice at once', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  try {
    const { outbox, ctx } = setup();
    const entry = await queue(ctx, hearthInputs(fake.url), {});
    const held = await outbox.lock(entry.id);
    assert.ok(held);
    assert.deepEqual(await attemptEntry(entry.id, ctx), { state: 'busy' });
    await held.release();
    assert.equal(fake.requests.length, 0);
    assert.equal((await attemptEntry(entry.id, ctx)).state, 'delivered');
  } finally {
    await fake.close();
  }
});

test('a lock left before this boot is taken over even when its pid lives again; a lock of this boot is not', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  try {
    const { outbox, ctx } = setup();
    const entry = await queue(ctx, hearthInputs(fake.url), {});
    // A notifier killed during delivery, then a reboot: the pid in its lock now names a live process (here, this one).
    const lockFile = join(outbox.dir, `.${entry.id}.lock`);
    writeFileSync(lockFile, `${process.pid}\n0123456789abcdef\nboot 00000000-0000-4000-8000-000000000000\n`);
    assert.equal((await attemptEntry(entry.id, ctx)).state, 'delivered');
    assert.equal(fake.requests.length, 1);
    assert.deepEqual(readdirSync(outbox.dir), [], 'no lock, guard or entry left');

    // The same lock written after the boot is a live process's: left alone.
    const next = await queue(ctx, hearthInputs(fake.url), { deploy_stdout: 'second' });
    const liveLock = join(outbox.dir, `.${next.id}.lock`);
    writeFileSync(liveLock, `${process.pid}\n0123456789abcdef\nboot ${readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()}\n`);
    assert.deepEqual(await attemptEntry(next.id, ctx), { state: 'busy' });
    assert.ok(existsSync(liveLock));
    assert.equal(fake.requests.length, 1);
  } finally {
    await fake.close();
  }
});

test('TEMP_URL_SIGNAL PUTs the body; 201 is delivered', async () => {
  const fake = await startFake(() => ({ status: 201 }));
  try {
    const { ctx } = setup();
    const entry = await queue(
      ctx,
      { deploy_signal_id: `${fake.url}/v1/AUTH_p/c/o?temp_url_sig=s3cr3t&temp_url_expires=1`, deploy_signal_verb: 'PUT' },
      { a: 1 },
    );
    assert.deepEqual(await attemptEntry(entry.id, ctx), { state: 'delivered', status: 201 });
    assert.equal(fake.requests[0]!.method, 'PUT');
    assert.equal(fake.requests[0]!.body.toString(), '{"a":1}');
    assert.equal(fake.requests[0]!.headers['idempotency-key'], undefined, 'only the hearth transport sends the key');
  } finally {
    await fake.close();
  }
});

/** A keystone v3 + Heat fake: tokens for (u1, pw), a catalog pointing back at itself. */
async function keystoneAndHeat(signalStatus: (i: number) => number): Promise<FakeServer> {
  let signals = 0;
  let base = '';
  const fake = await startFake((request) => {
    if (request.url === '/identity/v3/auth/tokens') {
      const auth = JSON.parse(request.body.toString()).auth;
      if (auth.identity.password.user.id !== 'u1' || auth.identity.password.user.password !== 'pw')
        return {
          status: 401,
          body: '{"error":{"code":401,"message":"The request you have made requires authentication.","title":"Unauthorized"}}',
        };
      const endpoints = ['internal', 'public'].map((iface) => ({
        interface: iface,
        region: 'RegionOne',
        url: `${base}/heat/v1/${auth.scope.project.id}`,
      }));
      return {
        status: 201,
        headers: { 'x-subject-token': 'tok-123' },
        body: JSON.stringify({
          token: {
            catalog: [
              { type: 'identity', endpoints: [] },
              { type: 'orchestration', endpoints },
            ],
          },
        }),
      };
    }
    return { status: signalStatus(signals++) };
  });
  base = fake.url;
  return fake;
}

const heatInputs = (base: string, password = 'pw') => ({
  deploy_signal_transport: 'HEAT_SIGNAL',
  deploy_auth_url: `${base}/identity/v3`,
  deploy_username: 'stack-user',
  deploy_user_id: 'u1',
  deploy_password: password,
  deploy_project_id: 'proj1',
  deploy_stack_id: 'web/5b6c',
  deploy_resource_name: 'my deployment',
});

test('HEAT_SIGNAL: keystone v3 password auth, then the resource signal with the token; retried on 5xx', async () => {
  const fake = await keystoneAndHeat((i) => (i === 0 ? 502 : 200));
  try {
    const { logger, ctx } = setup();
    await queue(ctx, heatInputs(fake.url), { deploy_stdout: 'done', deploy_status_code: 0 });
    assert.equal((await drainOutbox(ctx)).delivered, 1);
    assert.deepEqual(
      fake.requests.map((r) => `${r.method} ${r.url}`),
      [
        'POST /identity/v3/auth/tokens',
        'POST /heat/v1/proj1/stacks/web/5b6c/resources/my%20deployment/signal',
        'POST /identity/v3/auth/tokens',
        'POST /heat/v1/proj1/stacks/web/5b6c/resources/my%20deployment/signal',
      ],
    );
    assert.deepEqual(JSON.parse(fake.requests[0]!.body.toString()), {
      auth: { identity: { methods: ['password'], password: { user: { id: 'u1', password: 'pw' } } }, scope: { project: { id: 'proj1' } } },
    });
    assert.equal(fake.requests[3]!.headers['x-auth-token'], 'tok-123');
    assert.equal(fake.requests[3]!.body.toString(), '{"deploy_stdout":"done","deploy_status_code":0}');
    assert.doesNotMatch(logger.text(), /"pw"|tok-123/, 'no password or token in the log');
  } finally {
    await fake.close();
  }
});

test('a signal of an earlier action queued behind a newer one is dropped, not sent first to settle the new action', async () => {
  const fake = await keystoneAndHeat(() => 200);
  try {
    const { outbox, logger, ctx } = setup();
    // The server was down through an update: the old action's result (derived config ...a1) is still queued
    // when the new action's (...a2) is. CFN URLs and Heat resources stay the same across actions.
    const cfn = { deploy_signal_id: `${fake.url}/v1/signal/arn%3Aopenstack%3Aheat%3A%3Ap%3Astacks/web/5b6c/resources/dep?Signature=s` };
    const oldCfn = await queue(ctx, cfn, { deploy_status_code: 0, result: 'old' }, { id: 'c0ffee00-0000-4000-8000-0000000000a1' });
    const oldHeat = await queue(ctx, heatInputs(fake.url), { result: 'old' }, { id: 'c0ffee00-0000-4000-8000-0000000000a1' });
    // Another deployment's signal and the same action's are not touched.
    const other = await queue(ctx, hearthInputs(fake.url), { result: 'other' }, { id: 'c0ffee00-0000-4000-8000-0000000000b1' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const newCfn = await queue(ctx, cfn, { deploy_status_code: 0, result: 'new' }, { id: 'c0ffee00-0000-4000-8000-0000000000a2' });
    const newHeat = await queue(ctx, heatInputs(fake.url), { result: 'new' }, { id: 'c0ffee00-0000-4000-8000-0000000000a2' });
    assert.deepEqual(
      outbox
        .list()
        .entries.map((entry) => entry.id)
        .sort(),
      [other.id, newCfn.id, newHeat.id].sort(),
    );
    const dropped = logger.lines.filter((line) => String(line.msg).startsWith('dropping the queued signal of an earlier action'));
    assert.deepEqual(
      dropped.map((line) => [line.entry, line.supersededBy]),
      [
        [oldCfn.id, newCfn.id],
        [oldHeat.id, newHeat.id],
      ],
    );
    assert.doesNotMatch(logger.text(), /Signature=s|"pw"/);

    assert.deepEqual(await drainOutbox(ctx), { delivered: 3, rejected: 0, expired: 0, queued: 0, unreadable: 0 });
    const signals = fake.requests.filter((request) => !request.url.includes('/auth/tokens'));
    assert.deepEqual(signals.map((request) => (JSON.parse(request.body.toString()) as { result: string }).result).sort(), [
      'new',
      'new',
      'other',
    ]);
  } finally {
    await fake.close();
  }
});

test('HEAT_SIGNAL: a wrong password is rejected at keystone with its reason, not retried', async () => {
  const fake = await keystoneAndHeat(() => 200);
  try {
    const { outbox, ctx } = setup();
    const entry = await queue(ctx, heatInputs(fake.url, 'wrong-password'), {});
    const stored = readFileSync(outbox.pathOf(entry.id), 'utf8');
    assert.match(stored, /wrong-password/, 'the entry holds the credential it needs (0600)');
    const result = await attemptEntry(entry.id, ctx);
    assert.equal(result.state, 'rejected');
    assert.match(
      result.state === 'rejected' ? result.reason : '',
      /keystone .* answered 401: The request you have made requires authentication/,
    );
    assert.equal(fake.requests.length, 1);
  } finally {
    await fake.close();
  }
});

test('follow mode picks up a newly queued signal without waiting for the rescan', async () => {
  const fake = await startFake(() => ({ status: 200 }));
  const stop = new AbortController();
  try {
    const { ctx } = setup();
    ctx.outbox.ensureDir();
    const draining = drainOutbox(ctx, { mode: 'follow', stop: stop.signal, rescanMs: 60_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const queuedAt = Date.now();
    await queue(ctx, hearthInputs(fake.url), { n: 1 });
    for (let i = 0; i < 1000 && fake.requests.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(fake.requests.length, 1);
    assert.ok(fake.requests[0]!.at - queuedAt < 15_000, `${fake.requests[0]!.at - queuedAt} ms`);
    stop.abort();
    assert.deepEqual(await draining, { delivered: 1, rejected: 0, expired: 0, queued: 0, unreadable: 0 });
  } finally {
    stop.abort();
    await fake.close();
  }
});

test('a drain stopped between entries counts the entries it did not attempt as still queued', async () => {
  const stop = new AbortController();
  const fake = await startFake(() => {
    stop.abort(); // SIGTERM while the first entry is in flight
    return { status: 200 };
  });
  try {
    const { outbox, ctx } = setup();
    await queue(ctx, hearthInputs(fake.url), { n: 1 });
    await queue(ctx, hearthInputs(fake.url), { n: 2 });
    const summary = await drainOutbox(ctx, { stop: stop.signal });
    assert.deepEqual(summary, { delivered: 1, rejected: 0, expired: 0, queued: 1, unreadable: 0 });
    assert.equal(fake.requests.length, 1);
    assert.equal(outbox.list().entries.length, 1);
    assert.deepEqual(await drainOutbox(ctx, { stop: stop.signal }), { delivered: 0, rejected: 0, expired: 0, queued: 1, unreadable: 0 });
  } finally {
    await fake.close();
  }
});

test('a retry wait longer than a Node timer holds (40 days) is waited, not turned into a tight loop', async () => {
  const fake = await startFake(() => ({ status: 503 }));
  const stop = new AbortController();
  try {
    const { ctx } = setup();
    const days40 = 40 * 24 * 3600 * 1000;
    await queue(ctx, hearthInputs(fake.url), { n: 1 });
    const list = ctx.outbox.list.bind(ctx.outbox);
    let scans = 0;
    ctx.outbox.list = () => {
      scans += 1;
      return list();
    };
    const draining = drainOutbox(
      { ...ctx, backoff: { baseMs: days40, capMs: days40 }, random: () => 0.99 },
      { mode: 'follow', stop: stop.signal, rescanMs: days40 },
    );
    // The 0.5 s count from the first attempt, not from the start: a loaded machine may take that long to make it.
    for (let i = 0; i < 500 && fake.requests.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 20));
    const scansBefore = scans;
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(fake.requests.length, 1, 'one attempt, then a 40-day wait');
    assert.ok(scans - scansBefore <= 5, `the outbox was scanned ${scans - scansBefore} times in 0.5 s`);
    stop.abort();
    assert.deepEqual(await draining, { delivered: 0, rejected: 0, expired: 0, queued: 1, unreadable: 0 });
  } finally {
    stop.abort();
    await fake.close();
  }
});
