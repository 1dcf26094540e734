// The heat-config bin over a deployed dir that a full disk, a crash or a wrong hand damaged: it says which path in
// one log line and runs nothing it cannot record, and a completed deployment whose marker was cut is never run again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, deployment, logRecords, runBin, world } from './test-support.ts';

/** Why the full-disk test cannot run here, or false. */
function skipReason(): string | false {
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {
    timeout: 10_000,
  });
  return probe.status === 0
    ? false
    : `cannot mount a tmpfs in a user namespace here (unshare: ${probe.stderr.toString().trim() || probe.status})`;
}

test('a deployed dir that is a file: one error line naming it, exit 1, nothing run, the file left alone', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
  w.deployments([deployment('f1', 'script')]);
  writeFileSync(w.deployedDir, 'not a dir');
  const run = await runBin([], w.env);
  assert.equal(run.code, 1, run.stderr);
  const errors = logRecords(run.stderr).filter((r) => r.level === 'error');
  assert.equal(errors.length, 1, run.stderr);
  assert.match(String(errors[0]!.msg), new RegExp(`^Cannot use the deployed dir ${w.deployedDir} \\(EEXIST.*no deployment was run`));
  assert.equal(readFileSync(w.deployedDir, 'utf8'), 'not a dir');
  assert.equal(existsSync(join(w.root, 'runs')), false);
  assert.deepEqual(w.notified(), []);
});

test('a deployed marker cut to nothing or to half its JSON by a power loss still means deployed: never run again', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
  w.deployments([deployment('z1', 'script'), deployment('h1', 'script')]);
  mkdirSync(w.deployedDir, { recursive: true });
  writeFileSync(join(w.deployedDir, 'z1.json'), '');
  writeFileSync(join(w.deployedDir, 'h1.json'), '{\n  "id": "h1",\n  "gro');
  const run = await runBin([], w.env);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(existsSync(join(w.root, 'runs')), false);
  assert.deepEqual(w.notified(), []);
  const skipped = logRecords(run.stderr).filter((r) => /^Skipping config (z1|h1), already deployed$/.test(String(r.msg)));
  assert.equal(skipped.length, 2, run.stderr);
});

test('a temp file a heat-config killed mid-write left (it holds the deployment) is removed, with one line naming it', async (t) => {
  const w = world(t);
  w.hook('script', `echo '{"deploy_status_code": 0}'`);
  w.deployments([deployment('k1', 'script')]);
  mkdirSync(w.deployedDir, { recursive: true });
  // The name writeFileAtomic gives a temp file, with the pid of a writer that is gone (SIGKILLed).
  const deadPid = spawnSync('true').pid;
  const leftover = `.k1.running.${deadPid}.0123456789ab.tmp`;
  writeFileSync(
    join(w.deployedDir, leftover),
    JSON.stringify(deployment('k1', 'script', { inputs: [{ name: 'password', value: 's3cret' }] })),
  );
  const run = await runBin([], w.env);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(existsSync(join(w.deployedDir, leftover)), false);
  const removed = logRecords(run.stderr).filter((r) =>
    /^Removed 1 temp file\(s\) a heat-config killed mid-write left in /.test(String(r.msg)),
  );
  assert.deepEqual(
    removed.map((r) => r.files),
    [[leftover]],
    run.stderr,
  );
  assert.deepEqual(
    w.notified().map((call) => call.signal),
    [{ deploy_status_code: 0 }],
  );
});

test(
  'a deployed dir on a full disk: one error line naming it and ENOSPC, nothing run; the deployment runs once space is back',
  { skip: skipReason() },
  async (t) => {
    const w = world(t);
    w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
    w.deployments([deployment('s1', 'script')]);
    const mount = mkdtempSync(join(tmpdir(), 'heat-config-full-'));
    t.after(() => rmSync(mount, { recursive: true, force: true }));
    const deployedDir = join(mount, 'deployed');
    const bin = `'${process.execPath}' '${BIN}'`;
    const script = [
      `mount -t tmpfs -o size=64k tmpfs '${mount}' || exit 97`,
      `mkdir '${deployedDir}'`,
      `dd if=/dev/zero of='${mount}/fill' bs=4k 2>/dev/null; df '${mount}' | grep -q ' 100% ' || exit 99`,
      `${bin}; echo "full=$?"`,
      `rm '${mount}/fill'`,
      `${bin}; echo "freed=$?"`,
      `ls -A '${deployedDir}'`,
    ].join('\n');
    const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script], {
      env: { ...w.env, HEAT_CONFIG_DEPLOYED: deployedDir },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    clearTimeout(killer);
    assert.equal(code, 0, `${stdout}\n${stderr}`);
    assert.match(stdout, /^full=1$/m, stderr);
    assert.match(stdout, /^freed=0$/m, stderr);
    const errors = logRecords(stderr).filter((r) => r.level === 'error');
    assert.equal(errors.length, 1, stderr);
    assert.match(String(errors[0]!.msg), new RegExp(`^Cannot use the deployed dir ${deployedDir} \\(ENOSPC`));
    assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\n', 'the hook ran once, after space came back');
    assert.deepEqual(
      w.notified().map((call) => call.signal),
      [{ deploy_status_code: 0 }],
    );
    const left = stdout.slice(stdout.indexOf('freed=0')).split('\n').slice(1).filter(Boolean);
    assert.deepEqual(
      left.filter((name) => name !== '.heat-config.lock').sort(),
      ['s1.json', 's1.notify.json'],
      'deployed, its result kept; no running marker or temp file is left',
    );
  },
);
