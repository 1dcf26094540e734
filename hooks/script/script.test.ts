import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_OUTPUT_CHARS } from '../_lib/result.ts';
import { runHookExecutable, sampleDeployment, type HookRun } from '../_lib/testing.ts';

const HOOK = new URL('./script', import.meta.url).pathname;
const ID = 'c1f2a3b4-0000-4000-8000-000000000001';

function root(): { root: string; working: string; outputs: string } {
  const dir = mkdtempSync(join(tmpdir(), 'hook-script-'));
  return {
    root: dir,
    working: join(dir, 'var/lib/heat-config/heat-config-script'),
    outputs: join(dir, 'var/run/heat-config/heat-config-script'),
  };
}

const RECORDING_SCRIPT = `#!/bin/sh
echo "cwd=$(pwd)"
echo "foo=$foo count=$count flag=$flag list=$list data=$data empty=[$empty] password=[$deploy_password] signal=[$deploy_signal_id]"
echo "to stderr" >&2
printf 'first\\n' > "$heat_outputs_path.result"
echo "$heat_outputs_path" > "$heat_outputs_path.path"
exit 3
`;

test('runs the config as a script in the working dir with inputs as env; outputs, stdout, stderr and exit code come back', async () => {
  const dirs = root();
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      config: RECORDING_SCRIPT,
      inputs: [
        { name: 'foo', type: 'String', value: 'bar baz' },
        { name: 'count', type: 'Number', value: 3 },
        { name: 'flag', type: 'Boolean', value: true },
        { name: 'list', type: 'CommaDelimitedList', value: 'a,b' },
        { name: 'data', type: 'Json', value: { k: 1 } },
        { name: 'empty', type: 'String', value: null },
        { name: 'deploy_password', type: 'String', value: 'hunter2' },
        { name: 'deploy_signal_id', type: 'String', value: 'http://127.0.0.1:1/signal?Signature=s' },
      ],
      outputs: [{ name: 'result' }, { name: 'path' }, { name: 'never_written' }],
    }),
    { env: { HEARTH_ROOT: dirs.root } },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, {
    result: 'first\n',
    path: `${join(dirs.outputs, ID)}\n`,
    deploy_stdout: `cwd=${dirs.working}\nfoo=bar baz count=3 flag=true list=["a","b"] data={"k":1} empty=[] password=[] signal=[]\n`,
    deploy_stderr: 'to stderr\n',
    deploy_status_code: 3,
  });
  assert.equal(statSync(join(dirs.working, ID)).mode & 0o777, 0o700);
  assert.equal(statSync(dirs.working).mode & 0o777, 0o700);
  assert.equal(statSync(dirs.outputs).mode & 0o777, 0o700);
  assert.doesNotMatch(run.stderr, /hunter2/);
});

test('options.expose_credentials passes deploy_password and deploy_signal_id; HEAT_SCRIPT_WORKING/OUTPUTS override the dirs', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-script-env-'));
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      config: '#!/bin/sh\necho "$deploy_password $deploy_signal_id $(pwd)"\necho x > "$heat_outputs_path.o"\n',
      inputs: [
        { name: 'deploy_password', value: 'pw' },
        { name: 'deploy_signal_id', value: 'http://127.0.0.1:1/s' },
      ],
      outputs: [{ name: 'o' }],
      options: { expose_credentials: true },
    }),
    { env: { HEAT_SCRIPT_WORKING: join(dir, 'w'), HEAT_SCRIPT_OUTPUTS: join(dir, 'o') } },
  );
  assert.equal(run.result?.deploy_stdout, `pw http://127.0.0.1:1/s ${join(dir, 'w')}\n`);
  assert.equal(run.result?.o, 'x\n');
  assert.ok(existsSync(join(dir, 'o', `${ID}.o`)));
});

test('running the same id again replaces the script whole and never reports a stale output', async () => {
  const dirs = root();
  const long = `#!/bin/sh\necho long > "$heat_outputs_path.o"\n# ${'x'.repeat(200)}\n`;
  await runHookExecutable(HOOK, sampleDeployment({ config: long, outputs: [{ name: 'o' }] }), { env: { HEARTH_ROOT: dirs.root } });
  const short = '#!/bin/sh\necho short\n';
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: short, outputs: [{ name: 'o' }] }), {
    env: { HEARTH_ROOT: dirs.root },
  });
  assert.equal(readFileSync(join(dirs.working, ID), 'utf8'), short);
  assert.deepEqual(run.result, { deploy_stdout: 'short\n', deploy_stderr: '', deploy_status_code: 0 });
});

test('a script killed by a signal reports 128 + the signal number', async () => {
  const dirs = root();
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: '#!/bin/sh\nkill -9 $$\n' }), { env: { HEARTH_ROOT: dirs.root } });
  assert.equal(run.exitCode, 0);
  assert.equal(run.result?.deploy_status_code, 137);
});

test('config that is not script text fails the deployment with a reason, without crashing', async () => {
  const dirs = root();
  for (const config of [null, { a: 1 }, 42, '   ']) {
    const run = await runHookExecutable(HOOK, sampleDeployment({ config }), { env: { HEARTH_ROOT: dirs.root } });
    assert.equal(run.exitCode, 0);
    assert.equal(run.result?.deploy_status_code, 1);
    assert.match(String(run.result?.deploy_stderr), /config must be the text of a script/);
  }
  const noShebang = await runHookExecutable(HOOK, sampleDeployment({ config: 'echo hi\n' }), { env: { HEARTH_ROOT: dirs.root } });
  assert.deepEqual(noShebang.result, { deploy_stdout: 'hi\n', deploy_stderr: '', deploy_status_code: 0 }, 'run by /bin/sh, as execvp does');
});

test('stdin that is not a deployment: a failed result and exit 1; --help: usage and exit 0', async () => {
  const run = await runHookExecutable(HOOK, 'garbage');
  assert.equal(run.exitCode, 1);
  assert.equal(run.result?.deploy_status_code, 1);
  assert.match(String(run.result?.deploy_stderr), /not a JSON deployment/);
  const help = await runHookExecutable(HOOK, '', { args: ['--help'] });
  assert.equal(help.exitCode, 0);
  assert.match(help.stdout, /^usage: script < deployment.json/);
  assert.match(help.stdout, /HEAT_SCRIPT_WORKING/);
});

test('a working dir that cannot be created: failed result naming the path, exit 1', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-script-blocked-'));
  writeFileSync(join(dir, 'file'), '');
  mkdirSync(join(dir, 'o'));
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: '#!/bin/sh\n' }), {
    env: { HEAT_SCRIPT_WORKING: join(dir, 'file', 'w'), HEAT_SCRIPT_OUTPUTS: join(dir, 'o') },
  });
  assert.equal(run.exitCode, 1);
  assert.match(String(run.result?.deploy_stderr), /ENOTDIR.*file\/w/);
});

test('run through a symlink (as heat-config finds it in a hooks dir); non-UTF-8 and 5 MB of output still give one JSON result', async () => {
  const dirs = root();
  const link = join(dirs.root, 'script');
  symlinkSync(HOOK, link);
  const run = await runHookExecutable(
    link,
    sampleDeployment({ config: "#!/bin/sh\nprintf 'bad \\377 byte'\nhead -c 5000000 /dev/zero | tr '\\0' x >&2\n" }),
    { env: { HEARTH_ROOT: dirs.root } },
  );
  assert.equal(run.exitCode, 0, run.stderr.slice(0, 500));
  assert.equal(run.result?.deploy_stdout, 'bad \ufffd byte');
  // The end of a long output is kept, behind a line saying how much was cut (see MAX_OUTPUT_CHARS).
  assert.ok(
    String(run.result?.deploy_stderr).startsWith(
      `[hook: the first ${5_000_000 - MAX_OUTPUT_CHARS} characters of the tool's stderr were cut]\nxxx`,
    ),
  );
  assert.ok(String(run.result?.deploy_stderr).endsWith('x'.repeat(MAX_OUTPUT_CHARS)));
  assert.equal(run.result?.deploy_status_code, 0);
});

test("the script inherits heat-config's progress channel (fd 3): its lines reach the dispatcher", async () => {
  const dirs = root();
  const { spawn } = await import('node:child_process');
  const deployment = sampleDeployment({ config: '#!/bin/sh\necho "50% copied" >&3\necho done\n' });
  const child = spawn(HOOK, [], {
    env: { ...process.env, HEARTH_ROOT: dirs.root, HEAT_CONFIG_PROGRESS_FD: '3' },
    stdio: ['pipe', 'pipe', 'ignore', 'pipe'],
  });
  let progress = '';
  let stdout = '';
  child.stdio[3]!.on('data', (chunk: Buffer) => (progress += chunk.toString()));
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stdin!.end(JSON.stringify(deployment));
  assert.equal(await new Promise((resolve) => child.on('close', resolve)), 0);
  assert.equal(progress, '50% copied\n');
  assert.equal((JSON.parse(stdout) as { deploy_stdout: string }).deploy_stdout, 'done\n');
});

test('a script that talks without end: the result keeps the end of stdout and stderr, small enough for heat-config to read', async () => {
  const dirs = root();
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      config: `#!/bin/sh
head -c 20000000 /dev/zero | tr '\\0' o
echo " LAST OUT"
head -c 3000000 /dev/zero | tr '\\0' e >&2
echo " LAST ERR" >&2
exit 4
`,
    }),
    { env: { HEARTH_ROOT: dirs.root }, timeoutMs: 60_000 },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.ok(Buffer.byteLength(run.stdout) < 4 * 1024 * 1024, `result of ${Buffer.byteLength(run.stdout)} bytes`);
  const result = run.result!;
  assert.equal(result.deploy_status_code, 4);
  assert.match(
    String(result.deploy_stdout),
    new RegExp(`^\\[hook: the first ${20_000_010 - MAX_OUTPUT_CHARS} characters of the tool's stdout were cut\\]\noooo`),
  );
  assert.ok(String(result.deploy_stdout).endsWith('ooo LAST OUT\n'));
  assert.match(
    String(result.deploy_stderr),
    new RegExp(`^\\[hook: the first ${3_000_010 - MAX_OUTPUT_CHARS} characters of the tool's stderr were cut\\]\neeee`),
  );
  assert.ok(String(result.deploy_stderr).endsWith('eee LAST ERR\n'));
});

test('a script that writes more than 100 MB runs to its end and keeps its status; the result keeps the end', async () => {
  const dirs = root();
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({ config: `#!/bin/sh\nhead -c 105000000 /dev/zero | tr '\\0' o\necho " LAST OUT"\n` }),
    { env: { HEARTH_ROOT: dirs.root }, timeoutMs: 60_000 },
  );
  assert.equal(run.exitCode, 0, run.stderr.slice(-2000));
  const result = run.result!;
  // execa's 100 MB maxBuffer stopped the script with SIGPIPE (status 141) before its last line.
  assert.equal(result.deploy_status_code, 0, String(result.deploy_stderr).slice(-500));
  assert.match(
    String(result.deploy_stdout),
    new RegExp(`^\\[hook: the first ${105_000_010 - MAX_OUTPUT_CHARS} characters of the tool's stdout were cut\\]\noooo`),
  );
  assert.ok(String(result.deploy_stdout).endsWith('ooo LAST OUT\n'));
});

test('a script that leaves a process holding its stdout: the result comes when the script exits, the process keeps running', async (t) => {
  const dirs = root();
  const started = Date.now();
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      config: '#!/bin/sh\nsleep 60 &\necho $! > "$heat_outputs_path.pid"\necho started\n',
      outputs: [{ name: 'pid' }],
    }),
    { env: { HEARTH_ROOT: dirs.root }, timeoutMs: 20_000 },
  );
  const pid = Number(readFileSync(join(dirs.outputs, `${ID}.pid`), 'utf8').trim());
  t.after(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  });
  // The hook waited for the sleep to close stdout, so heat-config's timeout failed the deployment (and killed the sleep).
  assert.equal(run.exitCode, 0, run.stderr.slice(-2000));
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
  assert.equal(run.result?.deploy_stdout, 'started\n');
  assert.equal(run.result?.deploy_status_code, 0);
  assert.doesNotThrow(() => process.kill(pid, 0), 'the background process is still running');
});

/** Polls until `path` exists (bounded), then returns its text. */
async function waitForFile(path: string, ms = 15_000): Promise<string> {
  const until = Date.now() + ms;
  while (!existsSync(path)) {
    if (Date.now() > until) assert.fail(`${path} did not appear within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return readFileSync(path, 'utf8');
}

/**
 * Runs the hook on a script that reports its pid, then loops until a SIGTERM, whose trap writes to stdout, stderr
 * and a file; resolves once the script runs, with both pids, the run and where its trap leaves its mark.
 */
async function startTrappingScript(): Promise<{ hookPid: number; scriptPid: number; running: Promise<HookRun>; trapped: string }> {
  const dirs = root();
  const marks = mkdtempSync(join(tmpdir(), 'hook-script-term-'));
  const script = `#!/bin/sh
trap 'echo "trapped on stdout"; echo "trapped on stderr" >&2; echo done > "${marks}/trapped"; exit 7' TERM
echo started
echo $$ > "${marks}/pid.tmp" && mv "${marks}/pid.tmp" "${marks}/pid"
while :; do sleep 0.05; done
`;
  let hookPid = 0;
  const running = runHookExecutable(HOOK, sampleDeployment({ config: script }), {
    env: { HEAT_SCRIPT_WORKING: dirs.working, HEAT_SCRIPT_OUTPUTS: dirs.outputs },
    onStart: (pid) => (hookPid = pid),
  });
  const scriptPid = Number(await waitForFile(join(marks, 'pid')));
  return { hookPid, scriptPid, running, trapped: join(marks, 'trapped') };
}

test('a SIGTERM to the hook and its script (a unit stopping) lets the script run its trap, and the hook reports it', async () => {
  const { hookPid, scriptPid, running, trapped } = await startTrappingScript();
  // What systemd's KillMode=control-group (or heat-config stopping its hook) does: every process gets it.
  process.kill(hookPid, 'SIGTERM');
  process.kill(scriptPid, 'SIGTERM');
  const run = await running;
  assert.equal(await waitForFile(trapped), 'done\n', 'the trap ran to its end (no SIGPIPE)');
  assert.equal(run.result?.deploy_status_code, 7, run.stderr);
  assert.equal(run.result?.deploy_stdout, 'started\ntrapped on stdout\n');
  assert.equal(run.result?.deploy_stderr, 'trapped on stderr\n');
});

test('a SIGTERM to the hook alone is passed on to its script after a grace, and the hook reports how it ended', async () => {
  const { hookPid, running, trapped } = await startTrappingScript();
  const sent = Date.now();
  process.kill(hookPid, 'SIGTERM');
  const run = await running;
  assert.ok(Date.now() - sent >= 1500, 'the script was given the grace first');
  assert.equal(run.result?.deploy_status_code, 7, run.stderr);
  assert.equal(await waitForFile(trapped), 'done\n');
  assert.match(run.stderr, /passing the signal on/);
});

test('an input no env var can hold (NUL in its value, = in its name) fails the deployment unrun, naming it', async () => {
  const dirs = root();
  const marker = join(dirs.root, 'ran');
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      config: `#!/bin/sh\necho "x=\${x-unset}"\ntouch "${marker}"\n`,
      inputs: [
        { name: 'ok', type: 'String', value: 'fine' },
        { name: 'x', type: 'String', value: 'a\u0000b' },
        { name: 'a=b', type: 'String', value: 'v' },
      ],
    }),
    { env: { HEARTH_ROOT: dirs.root } },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.equal(existsSync(marker), false, 'the script never ran without its input');
  assert.deepEqual(run.result, {
    deploy_stdout: '',
    deploy_stderr:
      'script hook: the script was not run: input "x": value contains a NUL byte; input "a=b": name cannot be an env var; ' +
      'no environment variable can hold that: change the input\n',
    deploy_status_code: 1,
  });
});
