// os-collect-config (the bin, as a process) whose cachedir is on a full disk: a small tmpfs in its own user and
// mount namespace (`unshare`, no root needed, no mount left behind), filled from inside and freed from here
// through /proc/PID/root. The daemon must keep polling (exiting made systemd restart it into the same failure
// every few seconds), name the file it cannot write once, keep the old cache whole, and run the command once
// space is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempDir } from './test-support/fixtures.ts';

const BIN = new URL('../bin/os-collect-config.js', import.meta.url).pathname;

/** Why this test cannot run here, or false. */
function skipReason(): string | false {
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {
    timeout: 10_000,
  });
  return probe.status === 0
    ? false
    : `cannot mount a tmpfs in a user namespace here (unshare: ${probe.stderr.toString().trim() || probe.status})`;
}

interface LogRecord {
  level?: string;
  msg?: string;
  error?: string;
}

function records(stderr: string): LogRecord[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as LogRecord);
}

/** Resolves once `check` holds, polling every 100 ms; fails after `ms` with `what` and `detail()`. */
async function until(what: string, check: () => boolean, detail: () => string, ms = 60_000): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) assert.fail(`timed out waiting for ${what}: ${detail()}`);
    await sleep(100);
  }
}

test(
  'the daemon on a full disk names the cache file once, keeps the old cache, and runs the command when space is back',
  { skip: skipReason() },
  async (t) => {
    const root = tempDir();
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const data = join(root, 'data');
    mkdirSync(data, { mode: 0o755 });
    writeFileSync(join(data, 'cfg'), '{"version": 1}');
    const mount = join(root, 'mnt');
    mkdirSync(mount);
    const ran = join(root, 'ran');
    const occ = [process.execPath, BIN, '--config-file', '/dev/null', '--cachedir', `${mount}/cache`, '--local-path', data];
    const occArgs = [...occ, '--min-polling-interval', '1', '--polling-interval', '1', '-c', `echo run >> '${ran}'`, 'local'];
    const quoted = (args: string[]) => args.map((arg) => `'${arg.replaceAll("'", `'\\''`)}'`).join(' ');
    const script = [
      `mount -t tmpfs -o size=64k tmpfs '${mount}' || exit 97`,
      // A first pass stores {"version": 1} and commits it; then the metadata changes and the disk fills.
      `${quoted([...occArgs.slice(0, -1), '--one-time', 'local'])} || exit 98`,
      `printf '{"version": 2, "pad": "%06000d"}' 0 > '${data}/cfg'`,
      `dd if=/dev/zero of='${mount}/fill' bs=4k 2>/dev/null; df '${mount}' | grep -q ' 100% ' || exit 99`,
      `exec ${quoted(occArgs)}`,
    ].join('\n');
    const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    let exit: number | null | undefined;
    child.once('exit', (code) => (exit = code));
    t.after(() => child.kill('SIGKILL'));
    const runs = (): number => readFileSync(ran, 'utf8').split('\n').filter(Boolean).length;
    const inside = (name: string): string => `/proc/${child.pid}/root${mount}/${name}`;
    const failures = (): LogRecord[] => records(stderr).filter((record) => /Could not store the collected metadata/.test(record.msg ?? ''));

    await until(
      'the error line',
      () => failures().length > 0 || exit !== undefined,
      () => stderr,
    );
    assert.equal(exit, undefined, `the daemon keeps running: ${stderr}`);
    assert.match(failures()[0]!.error ?? '', new RegExp(`cannot write ${mount}/cache/cfg\\.json: ENOSPC`));
    // Two more passes (1 s apart) fail the same way: still polling, one error line in all, nothing run, the old cache whole.
    await sleep(3_000);
    assert.equal(exit, undefined, `the daemon keeps running: ${stderr}`);
    assert.equal(failures().length, 1, stderr);
    assert.equal(failures()[0]!.level, 'error');
    assert.equal(runs(), 1, 'the command ran only for the first pass');
    assert.deepEqual(JSON.parse(readFileSync(inside('cache/cfg.json'), 'utf8')), { version: 1 });
    assert.deepEqual(JSON.parse(readFileSync(inside('cache/cfg.json.last'), 'utf8')), { version: 1 });

    rmSync(inside('fill'));
    await until(
      'the command to run with the new metadata',
      () => runs() === 2 || exit !== undefined,
      () => stderr,
    );
    assert.equal(JSON.parse(readFileSync(inside('cache/cfg.json.last'), 'utf8')).version, 2);
    assert.ok(
      records(stderr).some((record) => record.msg === 'The metadata cache can be written again'),
      stderr,
    );
    child.kill('SIGTERM');
    await until(
      'the daemon to stop',
      () => exit !== undefined,
      () => stderr,
      30_000,
    );
  },
);
