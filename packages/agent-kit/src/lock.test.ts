import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { once } from 'node:events';
import { LockBusyError, acquireLock, withLock } from './lock.ts';

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-kit-lock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The pid of a process that has already exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

test('acquireLock creates the file holding our pid, and release removes it', async (t) => {
  const path = join(tempDir(t), 'sub', 'agent.lock');
  const lock = await acquireLock(path);
  assert.equal(readFileSync(path, 'utf8').split('\n')[0], String(process.pid));
  await lock.release();
  assert.equal(existsSync(path), false);
  await lock.release();
});

test('a held lock fails fast with LockBusyError naming the holder pid', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const lock = await acquireLock(path);
  const started = Date.now();
  await assert.rejects(acquireLock(path), (error: unknown) => {
    assert.ok(error instanceof LockBusyError);
    assert.equal(error.path, path);
    assert.equal(error.pid, process.pid);
    assert.equal(error.code, 'ERR_LOCK_BUSY');
    assert.match(error.message, new RegExp(`held by pid ${process.pid}`));
    return true;
  });
  assert.ok(Date.now() - started < 500, 'did not wait');
  await lock.release();
  const again = await acquireLock(path);
  await again.release();
});

test('a lock whose pid is dead is stale and taken over', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  writeFileSync(path, `${deadPid()}\n`);
  const lock = await acquireLock(path);
  assert.equal(readFileSync(path, 'utf8').split('\n')[0], String(process.pid));
  await lock.release();
});

test("os-refresh-config's `Locked by pid==N` content is understood", async (t) => {
  const path = join(tempDir(t), 'orc.lock');
  writeFileSync(path, `Locked by pid==${process.pid} at time.struct_time(tm_year=2024)`);
  await assert.rejects(acquireLock(path), (error: LockBusyError) => error.pid === process.pid);
  writeFileSync(path, `Locked by pid==${deadPid()} at time.struct_time(tm_year=2024)`);
  await (await acquireLock(path)).release();
});

test('a lock file naming no pid is busy while fresh and stale once old', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  writeFileSync(path, '');
  await assert.rejects(acquireLock(path), (error: LockBusyError) => error instanceof LockBusyError && error.pid === undefined);
  const old = new Date(Date.now() - 60_000);
  utimesSync(path, old, old);
  await (await acquireLock(path)).release();
});

test('wait with timeoutMs gives up with LockBusyError after the timeout', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const lock = await acquireLock(path);
  const started = Date.now();
  await assert.rejects(acquireLock(path, { wait: true, timeoutMs: 250, pollIntervalMs: 20 }), (error: LockBusyError) => {
    assert.match(error.message, /after waiting \d+ ms/);
    return error instanceof LockBusyError;
  });
  const waited = Date.now() - started;
  assert.ok(waited >= 240 && waited < 2000, `waited ${waited} ms`);
  await lock.release();
});

test('wait with timeoutMs keeps to the timeout when the wall clock steps back or forward (NTP)', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const lock = await acquireLock(path);
  const realNow = Date.now;
  t.after(() => (Date.now = realNow));
  for (const stepMs of [-2 * 365 * 24 * 3600_000, 3 * 3600_000]) {
    let first = true;
    // the wall clock steps just after the wait started
    Date.now = () => (first ? ((first = false), realNow()) : realNow() + stepMs);
    const started = performance.now();
    const waiting = acquireLock(path, { wait: true, timeoutMs: 250, pollIntervalMs: 20 }).then(
      () => 'acquired',
      (error: unknown) => (error instanceof LockBusyError ? 'busy' : String(error)),
    );
    const late = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 2 s'), 2000).unref());
    assert.equal(await Promise.race([waiting, late]), 'busy', `step ${stepMs} ms`);
    const waited = performance.now() - started;
    assert.ok(waited >= 240, `step ${stepMs} ms: gave up after ${waited} ms`);
  }
  Date.now = realNow;
  await lock.release();
});

test('wait gets the lock once another process holding it exits', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const lockModule = new URL('./lock.ts', import.meta.url).pathname;
  const script = `import { acquireLock } from ${JSON.stringify(lockModule)};
const lock = await acquireLock(${JSON.stringify(path)});
process.stdout.write('locked\\n');
setTimeout(() => lock.release().then(() => process.exit(0)), 300);`;
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  const [chunk] = (await once(child.stdout, 'data')) as [Buffer];
  assert.equal(chunk.toString(), 'locked\n');
  await assert.rejects(acquireLock(path), (error: LockBusyError) => error.pid === child.pid);
  const lock = await acquireLock(path, { wait: true, timeoutMs: 10_000, pollIntervalMs: 20 });
  assert.equal(readFileSync(path, 'utf8').split('\n')[0], String(process.pid));
  await lock.release();
});

test('a lock held by a process that was killed is taken over', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const child = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  writeFileSync(path, `${child.pid}\n`);
  await assert.rejects(acquireLock(path), (error: LockBusyError) => error.pid === child.pid);
  const waiting = acquireLock(path, { wait: true, timeoutMs: 10_000, pollIntervalMs: 20 });
  child.kill('SIGKILL');
  await once(child, 'exit');
  await (await waiting).release();
});

test('release leaves a lock file that is no longer ours', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const lock = await acquireLock(path);
  writeFileSync(path, '1\nsomeone-else\n');
  await lock.release();
  assert.equal(readFileSync(path, 'utf8'), '1\nsomeone-else\n');
});

test('of many takers of one stale lock exactly one wins', async (t) => {
  // Repeated: a takeover race shows only now and then (one CI run saw two winners of 12).
  for (let round = 0; round < 20; round++) {
    const path = join(tempDir(t), 'agent.lock');
    writeFileSync(path, `${deadPid()}\n`);
    const results = await Promise.allSettled(Array.from({ length: 24 }, () => acquireLock(path)));
    const winners = results.filter((result) => result.status === 'fulfilled');
    assert.equal(winners.length, 1, `round ${round}: ${winners.length} takers hold the lock`);
    for (const result of results) {
      if (result.status === 'rejected') assert.ok(result.reason instanceof LockBusyError, String(result.reason));
    }
    await winners[0]!.value.release();
    assert.deepEqual(readdirSync(dirname(path)), [], 'the lock, its takeover guard and every temporary file are gone');
  }
});

test('withLock runs fn under the lock and releases it on success and on throw', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const value = await withLock(path, () => {
    assert.ok(existsSync(path));
    return 42;
  });
  assert.equal(value, 42);
  assert.equal(existsSync(path), false);
  await assert.rejects(
    withLock(path, async () => {
      throw new Error('inside');
    }),
    /inside/,
  );
  assert.equal(existsSync(path), false);
});

test('acquireLock reports errors other than a busy lock as they are', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'file'), '');
  await assert.rejects(
    acquireLock(join(dir, 'file', 'agent.lock')),
    (error: NodeJS.ErrnoException) => !(error instanceof LockBusyError) && Boolean(error.code),
  );
});

const thisBoot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();

test('the lock file names this boot; a lock of an earlier boot is stale even when its pid lives again', async (t) => {
  const path = join(tempDir(t), 'agent.lock');
  const lock = await acquireLock(path);
  assert.match(readFileSync(path, 'utf8'), new RegExp(`^boot ${thisBoot}$`, 'm'));
  await lock.release();
  // Killed while holding it, then a reboot: pids start over, and this pid is alive now.
  writeFileSync(path, `${process.pid}\n0123456789abcdef\nboot 00000000-0000-4000-8000-000000000000\n`);
  const taken = await acquireLock(path);
  assert.match(readFileSync(path, 'utf8'), new RegExp(`^boot ${thisBoot}$`, 'm'));
  await taken.release();
  // The same pid with this boot's id is a live holder.
  writeFileSync(path, `${process.pid}\n0123456789abcdef\nboot ${thisBoot}\n`);
  await assert.rejects(acquireLock(path), LockBusyError);
  // Without a boot line (an older version's lock) the pid alone decides, as before.
  writeFileSync(path, `${process.pid}\n0123456789abcdef\n`);
  await assert.rejects(acquireLock(path), LockBusyError);
});

test('a lock that cannot be written on a full disk fails with ENOSPC and leaves no file behind', (t) => {
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {
    timeout: 10_000,
  });
  if (probe.status !== 0) return t.skip('cannot mount a tmpfs in a user namespace here');
  const mount = tempDir(t);
  const lockTs = new URL('./lock.ts', import.meta.url).pathname;
  const program = `import(${JSON.stringify(lockTs)}).then((m) => m.acquireLock(process.argv[1])).then(() => console.log('locked'), (e) => console.log('error', e.code))`;
  const script = [
    `mount -t tmpfs -o size=64k tmpfs '${mount}'`,
    `dd if=/dev/zero of='${mount}/fill' bs=4k 2>/dev/null; df '${mount}' | grep -q ' 100% ' || exit 99`,
    `'${process.execPath}' --import tsx -e "${program.replace(/"/g, '\\"')}" '${mount}/agent.lock'`,
    `ls -A '${mount}'`,
  ].join('\n');
  const run = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.deepEqual(run.stdout.trim().split('\n'), ['error ENOSPC', 'fill']);
});
