// The heat-config bin as os-refresh-config runs it: real processes, fake hooks, a recording fake notify.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, deployment, isRunning, logRecords, runBin, waitFor, world, type World } from './test-support.ts';

const ID = '11111111-2222-3333-4444-555555555555';

/** A loopback HTTP server answering 200 `{}` to every request; `received` holds the JSON bodies, in order. */
async function signalReceiver(t: { after(fn: () => void): void }): Promise<{ received: unknown[]; port: number }> {
  const received: unknown[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push(JSON.parse(body) as unknown);
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return { received, port: (server.address() as { port: number }).port };
}

function markers(w: World): string[] {
  return readdirSync(w.deployedDir)
    .filter((name) => !name.startsWith('.'))
    .sort();
}

test('runs the hook with the deployment on stdin, keeps notify.json, notifies, then writes the marker; a rerun skips it', async (t) => {
  const w = world(t);
  w.hook(
    'script',
    `cat > "${w.root}/stdin"\n[ -e "${w.deployedDir}/${ID}.json" ] && echo MARKER-TOO-EARLY >&2\n[ -e "${w.deployedDir}/${ID}.running" ] || echo NO-RUNNING-MARKER >&2\necho '{"deploy_stdout": "ok", "deploy_status_code": 0, "out1": "value"}'`,
  );
  w.deployments([
    deployment(ID, 'script', {
      inputs: [
        { name: 'port', type: 'Number', value: 8080 },
        { name: 'on', type: 'Boolean', value: true },
      ],
    }),
  ]);
  const run = await runBin([], w.env);
  assert.equal(run.code, 0, run.stderr);
  const stdin = JSON.parse(readFileSync(join(w.root, 'stdin'), 'utf8'));
  assert.equal(stdin.id, ID);
  assert.deepEqual(
    stdin.inputs.map((i: { value: unknown }) => i.value),
    ['8080', 'true'],
  );
  const [call, ...more] = w.notified();
  assert.deepEqual(more, []);
  assert.equal(call!.file, join(w.deployedDir, `${ID}.running`));
  assert.deepEqual(call!.signal, { deploy_stdout: 'ok', deploy_status_code: 0, out1: 'value' });
  const handed = JSON.parse(readFileSync(join(w.notifyLog, '00000.deployment'), 'utf8'));
  assert.equal(handed.id, ID, 'the file given to notify is the deployment');
  assert.deepEqual(markers(w), [`${ID}.json`, `${ID}.notify.json`]);
  assert.deepEqual(JSON.parse(readFileSync(join(w.deployedDir, `${ID}.notify.json`), 'utf8')), call!.signal);
  assert.equal(statSync(join(w.deployedDir, `${ID}.json`)).mode & 0o777, 0o600);
  assert.equal(statSync(w.configFile).mode & 0o777, 0o600, 'the config file is made 0600');
  assert.doesNotMatch(run.stderr, /MARKER-TOO-EARLY|NO-RUNNING-MARKER/);
  assert.deepEqual(readFileSync(join(w.notifyLog, '00000.dir'), 'utf8').split('\n').filter(Boolean), [
    `${ID}.notify.json`,
    `${ID}.running`,
  ]);

  const again = await runBin([], w.env);
  assert.equal(again.code, 0);
  assert.equal(w.notified().length, 1, 'a deployed id is never run or signalled again');
  assert.ok(logRecords(again.stderr).some((r) => r.msg === `Skipping config ${ID}, already deployed`));
});

test('signal data follows the hook: text stdout, failures with stderr, {} for silent success', async (t) => {
  const w = world(t);
  w.hook('text', 'echo plain text; echo err >&2');
  w.hook('fails', 'echo broken >&2; exit 4');
  w.hook('silent', 'exit 0');
  w.deployments([deployment('a1', 'text'), deployment('a2', 'fails'), deployment('a3', 'silent')]);
  const run = await runBin([], w.env);
  assert.equal(run.code, 0, 'hook failures do not fail the phase');
  assert.deepEqual(
    w.notified().map((c) => c.signal),
    [
      { deploy_stdout: 'plain text\n', deploy_stderr: 'err\n', deploy_status_code: 0 },
      { deploy_stdout: '', deploy_stderr: 'broken\n', deploy_status_code: 4 },
      {},
    ],
  );
});

test('groups without a hook are skipped silently for os-apply-config, with an error otherwise; never signalled', async (t) => {
  const w = world(t);
  w.hook('HeatUngrouped', 'echo "{}"');
  w.deployments([deployment('b1', 'os-apply-config'), deployment('b2', 'puppet'), deployment('b3', 'Heat::Ungrouped')]);
  const run = await runBin([], w.env);
  assert.equal(run.code, 0);
  const errors = logRecords(run.stderr).filter((r) => r.level === 'error');
  assert.deepEqual(
    errors.map((r) => r.msg),
    ['Skipping group puppet with no hook script'],
  );
  assert.deepEqual(
    w.notified().map((c) => c.file),
    [join(w.deployedDir, 'b3.running')],
  );
  assert.deepEqual(markers(w), ['b3.json', 'b3.notify.json']);
});

test('component groups run the config whose actions hold deploy_action, with its tool as group', async (t) => {
  const w = world(t);
  w.hook('script', `cat > "${w.root}/stdin"`);
  const configs = [
    { actions: ['CREATE'], tool: 'script', config: 'create it' },
    { actions: ['UPDATE', 'DELETE'], tool: 'script', config: 'update it' },
  ];
  w.deployments([
    deployment('c1', 'component', {
      config: { configs },
      inputs: [{ name: 'deploy_action', value: 'UPDATE' }],
    }),
    deployment('c2', 'component', { config: { configs }, inputs: [{ name: 'deploy_action', value: 'SUSPEND' }] }),
  ]);
  const run = await runBin([], w.env);
  assert.equal(run.code, 0);
  const stdin = JSON.parse(readFileSync(join(w.root, 'stdin'), 'utf8'));
  assert.deepEqual([stdin.id, stdin.group, stdin.config], ['c1', 'script', 'update it']);
  assert.ok(logRecords(run.stderr).some((r) => r.msg === 'Skipping group component, no valid script is defined for deploy action SUSPEND'));
  assert.deepEqual(markers(w), ['c1.json', 'c1.notify.json']);
});

test('notify failing: no marker, exit 1; the next run resends the saved result without running the hook again', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
  w.deployments([deployment('d1', 'script')]);
  const failed = await runBin([], { ...w.env, FAKE_NOTIFY_EXIT: '3' });
  assert.equal(failed.code, 1);
  assert.deepEqual(markers(w), ['d1.notify.json', 'd1.running']);
  assert.ok(logRecords(failed.stderr).some((r) => String(r.msg).startsWith('Error running heat-config-notify. [3]')));
  const retried = await runBin([], w.env);
  assert.equal(retried.code, 0, retried.stderr);
  assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\n', 'the hook ran once');
  assert.deepEqual(
    w.notified().map((c) => c.signal),
    [{ deploy_status_code: 0 }, { deploy_status_code: 0 }],
  );
  assert.deepEqual(markers(w), ['d1.json', 'd1.notify.json']);
});

test('a saved result is resent even when its hook is no longer found (removed, or another hook path)', async (t) => {
  const w = world(t);
  const hook = w.hook('script', `echo '{"deploy_status_code": 0, "out": "kept"}'`);
  w.deployments([deployment('d1', 'script')]);
  assert.equal((await runBin([], { ...w.env, FAKE_NOTIFY_EXIT: '75' })).code, 1);
  assert.deepEqual(markers(w), ['d1.notify.json', 'd1.running']);
  rmSync(hook);
  const retried = await runBin([], w.env);
  assert.equal(retried.code, 0, retried.stderr);
  assert.deepEqual(
    w.notified().map((c) => c.signal),
    [
      { deploy_status_code: 0, out: 'kept' },
      { deploy_status_code: 0, out: 'kept' },
    ],
  );
  assert.deepEqual(markers(w), ['d1.json', 'd1.notify.json']);
});

test('a signal heat-config-notify refuses for good (exit 1: a 4xx) is marked deployed, not resent on every run', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
  w.deployments([deployment('r1', 'script'), deployment('r2', 'script')]);
  const refused = await runBin([], { ...w.env, FAKE_NOTIFY_EXIT: '1' });
  assert.equal(refused.code, 0, 'nothing a rerun could fix: the configure phase does not fail');
  assert.deepEqual(markers(w), ['r1.json', 'r1.notify.json', 'r2.json', 'r2.notify.json']);
  assert.ok(logRecords(refused.stderr).some((r) => r.level === 'error' && /will not retry it/.test(String(r.msg))));
  const again = await runBin([], { ...w.env, FAKE_NOTIFY_EXIT: '1' });
  assert.equal(again.code, 0);
  assert.equal(w.notified().length, 2, 'each refused signal was handed over once');
  assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\nrun\n');
});

test('a hook interrupted by a crash is run again and signalled once; with HEAT_CONFIG_INTERRUPTED=fail it is reported failed', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
  w.deployments([deployment('e1', 'script'), deployment('e2', 'script')]);
  mkdirSync(w.deployedDir, { recursive: true });
  writeFileSync(join(w.deployedDir, 'e1.running'), '{}');
  const rerun = await runBin([], w.env);
  assert.equal(rerun.code, 0);
  assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\nrun\n');
  assert.ok(logRecords(rerun.stderr).some((r) => r.msg === 'The hook of e1 was interrupted; running it again'));
  assert.equal(w.notified().length, 2);

  const w2 = world(t);
  w2.hook('script', `echo run >> "${w2.root}/runs"`);
  w2.deployments([deployment('e3', 'script')]);
  mkdirSync(w2.deployedDir, { recursive: true });
  writeFileSync(join(w2.deployedDir, 'e3.running'), '{}');
  const failed = await runBin(['--interrupted', 'fail'], w2.env);
  assert.equal(failed.code, 0);
  assert.ok(!existsSync(join(w2.root, 'runs')), 'the hook is not run again');
  const [call] = w2.notified();
  assert.equal(call!.signal.deploy_status_code, 1);
  assert.match(String(call!.signal.deploy_stderr), /was interrupted/);
  assert.deepEqual(markers(w2), ['e3.json', 'e3.notify.json']);
});

test('heat-config killed mid-hook (with its hook, as when the VM dies): the next run runs it again and signals once', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"\n[ -e "${w.root}/fast" ] || sleep 30\necho '{"deploy_status_code": 0}'`);
  w.deployments([deployment('f1', 'script')]);
  const child = spawn(process.execPath, [join(import.meta.dirname, '../bin/heat-config.js')], {
    env: { ...process.env, ...w.env },
    stdio: 'ignore',
  });
  await waitFor(() => existsSync(join(w.root, 'runs')));
  // A process of another test may end between readdir and the read of its cmdline: it is not the hook.
  const cmdline = (pid: string): string => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  const hookPids = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && cmdline(p).includes(join(w.hooksDir, 'script')));
  assert.ok(hookPids.length > 0, 'the hook is running');
  process.kill(child.pid!, 'SIGKILL');
  for (const pid of hookPids) {
    try {
      process.kill(-Number(pid), 'SIGKILL');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error; // already gone with heat-config
    }
  }
  await new Promise((resolve) => child.on('close', resolve));
  assert.deepEqual(markers(w), ['f1.running']);
  writeFileSync(join(w.root, 'fast'), '');
  const rerun = await runBin([], w.env);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\nrun\n');
  assert.deepEqual(
    w.notified().map((c) => c.signal),
    [{ deploy_status_code: 0 }],
  );
  assert.deepEqual(markers(w), ['f1.json', 'f1.notify.json']);
});

test('heat-config killed while heat-config-notify reads a large result: notify still gets all of it, never a cut one', async (t) => {
  // A result read from heat-config's memory through a pipe ended where heat-config died: heat-config-notify then
  // signalled {} (its rule for input that is not JSON), and the deployment went COMPLETE without its outputs.
  const w = world(t);
  const big = 'x'.repeat(1_000_000);
  w.hook(
    'script',
    `printf '{"deploy_status_code": 0, "result": "whole", "deploy_stdout": "'\nhead -c ${big.length} /dev/zero | tr '\\0' x\nprintf '"}'`,
  );
  w.deployments([deployment('k1', 'script')]);
  // A notify that reads its stdin only once told to: by then heat-config is gone.
  const notify = join(w.root, 'bin/slow-notify');
  const script = [
    '#!/bin/sh',
    '[ "$1" = "--heartbeat" ] && exit 0',
    `touch "${w.root}/notify-started"`,
    'i=0',
    `while [ ! -e "${w.root}/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`,
    `cat > "${w.root}/notify-stdin"`,
    `touch "${w.root}/notify-done"`,
  ];
  writeFileSync(notify, `${script.join('\n')}\n`, { mode: 0o755 });
  const child = spawn(process.execPath, [BIN], { env: { ...process.env, ...w.env, HEAT_CONFIG_NOTIFY: notify }, stdio: 'ignore' });
  const closed = new Promise((resolve) => child.on('close', resolve));
  t.after(() => child.kill('SIGKILL'));
  await waitFor(() => existsSync(join(w.root, 'notify-started')), 30_000);
  child.kill('SIGKILL');
  await closed;
  writeFileSync(join(w.root, 'go'), '');
  await waitFor(() => existsSync(join(w.root, 'notify-done')), 30_000);
  const text = readFileSync(join(w.root, 'notify-stdin'), 'utf8');
  assert.ok(text.length > big.length, `heat-config-notify got ${text.length} bytes of a result of more than ${big.length}`);
  assert.deepEqual(JSON.parse(text), { deploy_status_code: 0, result: 'whole', deploy_stdout: big });
});

test('SIGTERM to heat-config stops the hook tree and leaves the running marker', async (t) => {
  const w = world(t);
  w.hook('script', `sleep 30 &\necho $! > "${w.root}/bg"\nwait`);
  w.deployments([deployment('g1', 'script')]);
  const child = spawn(process.execPath, [join(import.meta.dirname, '../bin/heat-config.js')], {
    env: { ...process.env, ...w.env },
    stdio: 'ignore',
  });
  await waitFor(() => existsSync(join(w.root, 'bg')) && readFileSync(join(w.root, 'bg'), 'utf8').endsWith('\n'));
  const background = Number(readFileSync(join(w.root, 'bg'), 'utf8'));
  child.kill('SIGTERM');
  const code = await new Promise((resolve) => child.on('close', resolve));
  assert.equal(code, 143);
  await waitFor(() => !isRunning(background), 5000);
  assert.deepEqual(markers(w), ['g1.running']);
  assert.deepEqual(w.notified(), []);
});

test('options.timeout bounds the hook: it and its children are killed and the signal says it timed out', async (t) => {
  const w = world(t);
  w.hook('script', `sleep 30 &\necho $! > "${w.root}/bg"\nsleep 30`);
  w.deployments([deployment('h1', 'script', { options: { timeout: 0.5 } })]);
  const run = await runBin([], { ...w.env, HEAT_CONFIG_KILL_GRACE_MS: '500' });
  assert.equal(run.code, 0, run.stderr);
  const [call] = w.notified();
  assert.equal(call!.signal.deploy_status_code, 124);
  assert.match(String(call!.signal.deploy_stderr), /timed out after 0\.5 s and was killed with its process tree/);
  const background = Number(readFileSync(join(w.root, 'bg'), 'utf8'));
  assert.equal(isRunning(background), false);
  assert.deepEqual(markers(w), ['h1.json', 'h1.notify.json']);
});

test('progress lines on fd 3 become heartbeats through heat-config-notify --heartbeat, before the result; a burst is coalesced', async (t) => {
  const w = world(t);
  // Each step waits until its heartbeat has arrived; then a burst of 20 lines at once.
  w.hook(
    'script',
    `for i in 1 2 3; do echo "step $i" >&3; until [ "$(ls "$NOTIFY_LOG" | wc -l)" -ge $i ]; do sleep 0.02; done; done
for i in $(seq 1 20); do echo "burst $i" >&3; done
sleep 0.5
echo '{"deploy_status_code": 0}'`,
  );
  w.deployments([deployment('i1', 'script')]);
  const run = await runBin([], w.env);
  assert.equal(run.code, 0, run.stderr);
  const heartbeats = w.heartbeats();
  assert.deepEqual(heartbeats.slice(0, 3), ['step 1', 'step 2', 'step 3']);
  assert.equal(heartbeats.at(-1), 'burst 20', 'the latest line is always sent');
  assert.ok(heartbeats.length < 3 + 20, `a burst does not spawn one notify per line (${heartbeats.length})`);
  const files = readdirSync(w.notifyLog).sort();
  assert.ok(files.findIndex((f) => f.endsWith('.args')) > files.findLastIndex((f) => f.endsWith('.heartbeat')), files.join());
});

test('a progress line with NUL bytes is sent without them, and never takes heat-config down while the hook runs', async (t) => {
  const w = world(t);
  w.hook(
    'script',
    `printf 'half\\000way\\n' >&3
i=0; until [ "$(ls "$NOTIFY_LOG" | wc -l)" -ge 1 ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i+1)); done
printf '\\000\\000\\n' >&3
sleep 0.3
echo '{"deploy_status_code": 0}'`,
  );
  w.deployments([deployment('n1', 'script'), deployment('n2', 'script')]);
  const run = await runBin([], w.env);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(w.heartbeats(), ['halfway', 'halfway'], 'one per deployment; a line of NULs alone sends nothing');
  assert.deepEqual(
    w.notified().map((c) => c.signal),
    [{ deploy_status_code: 0 }, { deploy_status_code: 0 }],
  );
  assert.deepEqual(markers(w), ['n1.json', 'n1.notify.json', 'n2.json', 'n2.notify.json']);
});

test('a missing config file exits 1; invalid JSON exits 0 doing nothing; the old deployed dir is migrated', async (t) => {
  const w = world(t);
  const missing = await runBin([], w.env);
  assert.equal(missing.code, 1);
  assert.ok(logRecords(missing.stderr).some((r) => r.msg === `No config file ${w.configFile}`));
  const old = join(w.root, 'var/run/heat-config/deployed');
  mkdirSync(old, { recursive: true });
  writeFileSync(join(old, 'old1.json'), '{}');
  w.deployments([deployment('old1', 'script')]);
  writeFileSync(w.configFile, '{not json');
  const invalid = await runBin([], w.env);
  assert.equal(invalid.code, 0);
  assert.deepEqual(markers(w), ['old1.json']);
  assert.ok(!existsSync(old));
});

test('--help, bad flags and bad env values', async (t) => {
  const w = world(t);
  const help = await runBin(['--help'], w.env);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--interrupted \{rerun,fail\}/);
  const bad = await runBin(['--interrupted', 'maybe'], w.env);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /usage: heat-config[\s\S]*error: argument --interrupted: invalid choice: 'maybe'/);
  const badEnv = await runBin([], { ...w.env, HEAT_CONFIG_HOOK_TIMEOUT: 'soon' });
  assert.equal(badEnv.code, 2);
  assert.match(badEnv.stderr, /HEAT_CONFIG_HOOK_TIMEOUT: expected a positive number of seconds, got 'soon'/);
});

test('the configure.d/55-heat-config script runs heat-config', async (t) => {
  const w = world(t);
  w.hook('script', 'echo "{}"');
  w.deployments([deployment('j1', 'script')]);
  const script = join(import.meta.dirname, '../os-refresh-config/configure.d/55-heat-config');
  chmodSync(script, 0o755);
  const result = await new Promise<number | null>((resolve) => {
    const child = spawn(script, [], { env: { ...process.env, ...w.env }, stdio: 'ignore' });
    child.on('close', resolve);
  });
  assert.equal(result, 0);
  assert.deepEqual(markers(w), ['j1.json', 'j1.notify.json']);
});

const REAL_NOTIFY = join(import.meta.dirname, '../../config-notify/bin/heat-config-notify.js');
const realNotifyReady = existsSync(join(import.meta.dirname, '../../config-notify/src/bin.ts'));

test(
  'with the real heat-config-notify (NO_SIGNAL): the running marker is a deployment file it accepts, heartbeats are a no-op',
  { skip: realNotifyReady ? false : 'packages/config-notify has no bin yet' },
  async (t) => {
    const w = world(t);
    w.hook('script', `echo "working" >&3\necho '{"deploy_status_code": 0}'`);
    w.deployments([deployment('k1', 'script')]);
    const run = await runBin(
      [],
      { ...w.env, HEAT_CONFIG_NOTIFY: REAL_NOTIFY, HEARTH_OUTBOX_DIR: join(w.root, 'outbox') },
      { timeoutMs: 60_000 },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(markers(w), ['k1.json', 'k1.notify.json']);
    assert.ok(!logRecords(run.stderr).some((r) => r.msg === 'heartbeat not sent'), run.stderr);
  },
);

test(
  'with the real heat-config-notify (HEARTH_SIGNAL): progress lines that look like flags ("--- step 1 ---", "-h") are heartbeat messages',
  { skip: realNotifyReady ? false : 'packages/config-notify has no bin yet' },
  async (t) => {
    const w = world(t);
    const received: Array<{ url: string; body: unknown }> = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push({ url: request.url ?? '', body: JSON.parse(body) as unknown });
        writeFileSync(join(w.root, `request-${received.length}`), '');
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const { port } = server.address() as { port: number };
    // Each line waits (at most 10 s) for its heartbeat to arrive, so none is coalesced away.
    const untilRequest = (n: number) => `i=0; until [ -e "${w.root}/request-${n}" ] || [ $i -ge 200 ]; do sleep 0.05; i=$((i+1)); done`;
    w.hook('script', `echo "--- step 1 ---" >&3\n${untilRequest(1)}\necho "-h" >&3\n${untilRequest(2)}\necho '{"deploy_status_code": 0}'`);
    const signalUrl = `http://127.0.0.1:${port}/v1/guest/deployments/h1/signal?token=t`;
    w.deployments([
      deployment('h1', 'script', {
        inputs: [
          { name: 'deploy_signal_transport', type: 'String', value: 'HEARTH_SIGNAL' },
          { name: 'deploy_signal_id', type: 'String', value: signalUrl },
        ],
      }),
    ]);
    const run = await runBin(
      [],
      { ...w.env, HEAT_CONFIG_NOTIFY: REAL_NOTIFY, HEARTH_OUTBOX_DIR: join(w.root, 'outbox') },
      { timeoutMs: 60_000 },
    );
    assert.equal(run.code, 0, run.stderr);
    assert.ok(!logRecords(run.stderr).some((r) => r.msg === 'heartbeat not sent'), run.stderr);
    assert.deepEqual(received, [
      { url: '/v1/guest/deployments/h1/heartbeat?token=t', body: { message: '--- step 1 ---' } },
      { url: '/v1/guest/deployments/h1/heartbeat?token=t', body: { message: '-h' } },
      { url: '/v1/guest/deployments/h1/signal?token=t', body: { deploy_status_code: 0 } },
    ]);
  },
);

test(
  'with the real heat-config-notify: a mistyped HEARTH_NOTIFY_* value keeps the result (no marker); once fixed, it is delivered once',
  { skip: realNotifyReady ? false : 'packages/config-notify has no bin yet' },
  async (t) => {
    const w = world(t);
    const { received, port } = await signalReceiver(t);
    w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0, "result": "done"}'`);
    w.deployments([
      deployment('m1', 'script', {
        inputs: [
          { name: 'deploy_signal_transport', type: 'String', value: 'HEARTH_SIGNAL' },
          { name: 'deploy_signal_id', type: 'String', value: `http://127.0.0.1:${port}/v1/guest/deployments/m1/signal?token=t` },
        ],
      }),
    ]);
    const env = { ...w.env, HEAT_CONFIG_NOTIFY: REAL_NOTIFY, HEARTH_OUTBOX_DIR: join(w.root, 'outbox') };
    const typo = await runBin([], { ...env, HEARTH_NOTIFY_TIMEOUT_MS: '30s' }, { timeoutMs: 60_000 });
    assert.equal(typo.code, 1, 'the configure phase fails, so it runs again');
    assert.deepEqual(markers(w), ['m1.notify.json', 'm1.running'], 'not marked deployed: the result is kept');
    assert.ok(
      logRecords(typo.stderr).some((r) => /Error running heat-config-notify\. \[78\].*HEARTH_NOTIFY_/.test(String(r.msg))),
      typo.stderr,
    );
    assert.deepEqual(received, []);
    const fixed = await runBin([], env, { timeoutMs: 60_000 });
    assert.equal(fixed.code, 0, fixed.stderr);
    assert.deepEqual(markers(w), ['m1.json', 'm1.notify.json']);
    assert.deepEqual(received, [{ deploy_status_code: 0, result: 'done' }]);
    assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\n', 'the hook ran once');
  },
);

test('heat-config killed on its own leaves its hook running: the next run stops that hook before running it again', async (t) => {
  const w = world(t);
  // The hook leads its own process group, so it outlives a heat-config killed alone (OOM killer, kill -9, a crash).
  w.hook('script', `echo "start $$" >> "${w.root}/runs"\n[ -e "${w.root}/fast" ] || sleep 30\necho "end $$" >> "${w.root}/runs"`);
  w.deployments([deployment('n1', 'script')]);
  const child = spawn(process.execPath, [BIN], { env: { ...process.env, ...w.env }, stdio: 'ignore' });
  const runs = () => (existsSync(join(w.root, 'runs')) ? readFileSync(join(w.root, 'runs'), 'utf8') : '');
  await waitFor(() => runs() !== '');
  // heat-config records its hook right after the spawn; a load spike may let the hook write first.
  await waitFor(() => existsSync(join(w.deployedDir, '.n1.hook')), 2000).catch(() => undefined);
  const leftover = Number(/^start (\d+)/.exec(runs())![1]);
  t.after(() => {
    if (isRunning(leftover)) process.kill(-leftover, 'SIGKILL');
  });
  process.kill(child.pid!, 'SIGKILL');
  await new Promise((resolve) => child.on('close', resolve));
  assert.ok(isRunning(leftover), 'the hook outlived heat-config');
  writeFileSync(join(w.root, 'fast'), '');
  const rerun = await runBin([], w.env);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.ok(!isRunning(leftover), 'the leftover hook was stopped');
  const lines = runs().split('\n').filter(Boolean);
  assert.equal(lines.length, 3, runs());
  assert.equal(lines[0], `start ${leftover}`);
  assert.match(lines[1]!, /^start \d+$/);
  assert.equal(lines[2], lines[1]!.replace('start', 'end'), 'the second run began after the first one was stopped, and only it ended');
  assert.ok(
    logRecords(rerun.stderr).some((r) => String(r.msg).includes(`left by a heat-config that died is still running (pid ${leftover})`)),
    rerun.stderr,
  );
  assert.deepEqual(markers(w), ['n1.json', 'n1.notify.json']);
  assert.ok(!existsSync(join(w.deployedDir, '.n1.hook')));
});

test('a hook record naming a pid that is now another process (or damaged) stops nothing', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"`);
  w.deployments([deployment('p1', 'script'), deployment('p2', 'script')]);
  mkdirSync(w.deployedDir, { recursive: true });
  const bystander = spawn('sleep', ['30'], { stdio: 'ignore' });
  t.after(() => bystander.kill('SIGKILL'));
  writeFileSync(join(w.deployedDir, 'p1.running'), '{}');
  writeFileSync(join(w.deployedDir, '.p1.hook'), JSON.stringify({ pid: bystander.pid, startTime: '1' }));
  writeFileSync(join(w.deployedDir, 'p2.running'), '{}');
  writeFileSync(join(w.deployedDir, '.p2.hook'), '\0\0\0\0');
  const rerun = await runBin([], w.env);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.ok(isRunning(bystander.pid!), 'the process now holding that pid is left alone');
  assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\nrun\n');
});

test(
  'with the real heat-config-notify: a saved result whose running marker a crash damaged is still delivered, without running the hook',
  { skip: realNotifyReady ? false : 'packages/config-notify has no bin yet' },
  async (t) => {
    const w = world(t);
    const { received, port } = await signalReceiver(t);
    w.hook('script', `echo run >> "${w.root}/runs"`);
    w.deployments([
      deployment('q1', 'script', {
        inputs: [
          { name: 'deploy_signal_transport', type: 'String', value: 'HEARTH_SIGNAL' },
          { name: 'deploy_signal_id', type: 'String', value: `http://127.0.0.1:${port}/v1/guest/deployments/q1/signal?token=t` },
        ],
      }),
    ]);
    // What a power loss can leave on a disk that dropped its cache: the result saved, the running marker zeroed.
    mkdirSync(w.deployedDir, { recursive: true });
    writeFileSync(join(w.deployedDir, 'q1.notify.json'), '{"deploy_status_code": 0, "result": "saved"}');
    for (const damaged of ['\0'.repeat(512), '', '{"id": "q1", "inp']) {
      rmSync(join(w.deployedDir, 'q1.json'), { force: true });
      writeFileSync(join(w.deployedDir, 'q1.running'), damaged);
      received.length = 0;
      const run = await runBin(
        [],
        { ...w.env, HEAT_CONFIG_NOTIFY: REAL_NOTIFY, HEARTH_OUTBOX_DIR: join(w.root, 'outbox') },
        { timeoutMs: 60_000 },
      );
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(received, [{ deploy_status_code: 0, result: 'saved' }], run.stderr);
      assert.deepEqual(markers(w), ['q1.json', 'q1.notify.json']);
      assert.ok(
        logRecords(run.stderr).some((r) => String(r.msg).includes('q1.running was damaged')),
        run.stderr,
      );
    }
    assert.ok(!existsSync(join(w.root, 'runs')), 'the hook never ran');
  },
);

test('a saved result a crash damaged: the log says whether the hook ran cannot be known, and the hook runs again', async (t) => {
  const w = world(t);
  w.hook('script', `echo run >> "${w.root}/runs"; echo '{"deploy_status_code": 0}'`);
  w.deployments([deployment('r1', 'script')]);
  mkdirSync(w.deployedDir, { recursive: true });
  writeFileSync(join(w.deployedDir, 'r1.running'), '{}');
  writeFileSync(join(w.deployedDir, 'r1.notify.json'), '\0'.repeat(64));
  const rerun = await runBin([], w.env);
  assert.equal(rerun.code, 0, rerun.stderr);
  assert.equal(readFileSync(join(w.root, 'runs'), 'utf8'), 'run\n');
  assert.ok(
    logRecords(rerun.stderr).some(
      (r) => String(r.msg).includes('saved result of r1 cannot be read') && String(r.msg).includes('cannot be known'),
    ),
    rerun.stderr,
  );
  assert.deepEqual(
    w.notified().map((c) => c.signal),
    [{ deploy_status_code: 0 }],
  );
});
