// heat-config-notify --drain (the bin, as a process) on an outbox whose disk is full: a small tmpfs in
// its own user and mount namespace (`unshare`, no root needed, no mount left behind), filled before the
// drain starts. Queued signals must still go out: no room for a lock file or for an entry's retry state
// is no reason to stop, and a retry whose state could not be written must still wait its backoff.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { createLogger } from '@hearth/agent-kit';
import { Outbox, type OutboxEntry } from './outbox.ts';
import { queueSignal } from './queue.ts';
import { deploymentInfo } from './route.ts';
import { deploymentWith, startFake } from './test-support.ts';

const BIN = new URL('../bin/heat-config-notify.js', import.meta.url).pathname;

/** Why this test cannot run here, or false. */
function skipReason(): string | false {
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {
    timeout: 10_000,
  });
  return probe.status === 0
    ? false
    : `cannot mount a tmpfs in a user namespace here (unshare: ${probe.stderr.toString().trim() || probe.status})`;
}

/** Queues one HEARTH_SIGNAL entry for `deployment` to `signalUrl` in a staging outbox. */
async function stage(outbox: Outbox, deployment: string, signalUrl: string): Promise<OutboxEntry> {
  const info = deploymentInfo(
    deploymentWith(
      { deploy_signal_transport: 'HEARTH_SIGNAL', deploy_signal_id: signalUrl, deploy_signal_verb: 'POST' },
      { id: deployment },
    ),
  );
  const entry = await queueSignal(info, { deploy_status_code: 0 }, { outbox, log: createLogger({ name: 'test', level: 'error' }) });
  assert.ok(entry);
  return entry;
}

interface FullDiskRun {
  code: number | null;
  /** The bin's exit status, as the shell saw it. */
  rc: number;
  /** Names in the outbox after the run. */
  left: string[];
  stderr: string;
}

/**
 * Copies the staged outbox onto a 64 KiB tmpfs, fills the tmpfs, then runs the bin with `args` on it. With `stop`,
 * the bin runs until `stop` calls the function it is given (SIGTERM to the bin), once the bin started.
 * Async: the fake server answers meanwhile.
 */
function drainOnFullDisk(staged: string, args: string[], stop?: (stopBin: () => void) => void): Promise<FullDiskRun> {
  const mount = mkdtempSync(join(tmpdir(), 'hcn-full-'));
  const outbox = `${mount}/outbox`;
  const bin = [process.execPath, BIN, ...args, '--outbox-dir', outbox, '--timeout-ms', '2000'].map((a) => `'${a}'`).join(' ');
  const script = [
    `mount -t tmpfs -o size=64k tmpfs '${mount}'`,
    `cp -a '${staged}' '${outbox}'`,
    `dd if=/dev/zero of='${mount}/fill' bs=4k 2>/dev/null; df '${mount}' | grep -q ' 100% ' || exit 99`,
    stop === undefined ? `${bin}; echo "rc=$?"` : `${bin} &\necho "pid=$!"; wait $!; echo "rc=$?"`,
    `ls -A '${outbox}'`,
  ].join('\n');
  const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let binPid: number | undefined;
  // The bin is not in a pid namespace: its pid is ours to signal.
  const signalBin = (signal: NodeJS.Signals): void => {
    try {
      if (binPid !== undefined) process.kill(binPid, signal);
    } catch {
      // it already ended
    }
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
    const started = binPid === undefined && /^pid=(\d+)$/m.exec(stdout);
    if (!started) return;
    binPid = Number(started[1]);
    stop?.(() => signalBin('SIGTERM'));
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const killer = setTimeout(() => {
    signalBin('SIGKILL');
    child.kill('SIGKILL');
  }, 60_000);
  return new Promise((resolve) => {
    child.once('close', (code) => {
      clearTimeout(killer);
      rmSync(mount, { recursive: true, force: true });
      const match = /^rc=(\d+)$/m.exec(stdout);
      const left = match
        ? stdout
            .slice(match.index + match[0].length)
            .split('\n')
            .filter(Boolean)
        : [];
      resolve({ code, rc: match ? Number(match[1]) : -1, left, stderr });
    });
  });
}

const skip = skipReason();

test('a full disk does not stop the drain: a signal whose server is up is delivered, a failing one stays queued', { skip }, async () => {
  const fake = await startFake((request) =>
    request.url.includes('/down/') ? { status: 503, body: '{"error":{"message":"busy"}}' } : { status: 200 },
  );
  const staged = join(mkdtempSync(join(tmpdir(), 'hcn-stage-')), 'outbox');
  try {
    const outbox = new Outbox(staged);
    // The older entry comes first, and its server fails: its retry state cannot be written.
    const failing = await stage(outbox, 'c0ffee00-0000-4000-8000-00000000000a', `${fake.url}/v1/guest/deployments/down/signal?token=t`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const going = await stage(outbox, 'c0ffee00-0000-4000-8000-00000000000b', `${fake.url}/v1/guest/deployments/up/signal?token=t`);
    assert.ok(failing.createdAt < going.createdAt);

    const run = await drainOnFullDisk(staged, ['--drain', '--once']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.rc, 0, `the drain exits 0 (one delivered, one still queued), not 70: ${run.stderr}`);
    assert.deepEqual(
      fake.requests.map((request) => [request.url, request.headers['idempotency-key']]),
      [
        ['/v1/guest/deployments/down/signal?token=t', failing.id],
        ['/v1/guest/deployments/up/signal?token=t', going.id],
      ],
    );
    // The mark of the server's answer (a few bytes: the full disk still took it) stays while an entry is queued.
    assert.deepEqual(
      run.left.filter((name) => !name.startsWith('.answered-')),
      [`${failing.id}.json`],
      'the failing entry stays queued; no lock or temp file is left',
    );
    assert.match(run.stderr, /could not record the attempt in the outbox/);
    assert.doesNotMatch(run.stderr, /token=t/);
  } finally {
    await fake.close();
    rmSync(staged, { recursive: true, force: true });
  }
});

test(
  'on a full disk the daemon still waits its backoff between attempts (no tight loop on a retry it could not record)',
  { skip },
  async () => {
    const fake = await startFake(() => ({ status: 503, body: '{"error":{"message":"busy"}}' }));
    const staged = join(mkdtempSync(join(tmpdir(), 'hcn-stage-')), 'outbox');
    try {
      await stage(new Outbox(staged), 'c0ffee00-0000-4000-8000-00000000000c', `${fake.url}/v1/guest/deployments/down/signal?token=t`);
      // Stopped 2.5 s after its first attempt, not a fixed time after its start: a slow start (seconds on a loaded
      // machine) must not leave it no time to make an attempt at all.
      const run = await drainOnFullDisk(
        staged,
        ['--drain', '--follow', '--retry-base-ms', '2000', '--retry-cap-ms', '2000'],
        (stopBin) =>
          void (async () => {
            for (let i = 0; i < 400 && fake.requests.length === 0; i += 1) await sleep(100);
            await sleep(2500);
            stopBin();
          })(),
      );
      assert.equal(run.code, 0, run.stderr);
      assert.ok(fake.requests.length >= 1, `no attempt: ${run.stderr}`);
      // Waits of up to 2 s (full jitter) in 2.5 s from the first attempt: a handful of attempts, not thousands.
      const inWindow = fake.requests.filter((request) => request.at <= fake.requests[0]!.at + 2500).length;
      assert.ok(inWindow <= 30, `${inWindow} attempts in 2.5 s`);
      assert.equal(run.left.filter((name) => name.endsWith('.json')).length, 1, 'still queued');
    } finally {
      await fake.close();
      rmSync(staged, { recursive: true, force: true });
    }
  },
);
