import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive } from './process-tree.ts';
import { OutputTail } from './output-tail.ts';
import { runProcess, type RunProcessResult } from './run-process.ts';

const FIELDS: (keyof RunProcessResult)[] = [
  'command',
  'cwd',
  'exitCode',
  'signal',
  'stdout',
  'stderr',
  'durationMs',
  'timedOut',
  'failed',
  'stdoutCutChars',
  'stderrCutChars',
];

function assertShape(result: RunProcessResult): void {
  assert.deepEqual(Object.keys(result).sort(), [...FIELDS].sort());
}

test('a successful command: untrimmed output, exit 0, not failed', async () => {
  const result = await runProcess('sh', ['-c', 'printf "out\\n\\n"; printf "err\\n" >&2']);
  assertShape(result);
  assert.equal(result.exitCode, 0);
  assert.equal(result.signal, null);
  assert.equal(result.stdout, 'out\n\n');
  assert.equal(result.stderr, 'err\n');
  assert.equal(result.failed, false);
  assert.equal(result.timedOut, false);
  assert.equal(result.command, `sh -c 'printf "out\\n\\n"; printf "err\\n" >&2'`);
  assert.equal(result.cwd, process.cwd());
  assert.ok(result.durationMs >= 0 && result.durationMs < 5000);
});

test('a non-zero exit is a result, not an exception', async () => {
  const result = await runProcess('sh', ['-c', 'echo partial; echo broken >&2; exit 7']);
  assertShape(result);
  assert.equal(result.exitCode, 7);
  assert.equal(result.failed, true);
  assert.equal(result.stdout, 'partial\n');
  assert.equal(result.stderr, 'broken\n', 'nothing is added: the child exited by itself');
});

test('a missing executable: exitCode null, failed, stderr says why', async () => {
  const result = await runProcess('hearth-no-such-command', ['x']);
  assertShape(result);
  assert.equal(result.exitCode, null);
  assert.equal(result.failed, true);
  assert.equal(result.timedOut, false);
  assert.match(result.stderr, /hearth-no-such-command x: could not start: executable not found/);
});

test('a file that is not executable cannot start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-kit-run-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'hook'), '#!/bin/sh\necho ran\n', { mode: 0o644 });
  const result = await runProcess(join(dir, 'hook'), []);
  assert.equal(result.exitCode, null);
  assert.equal(result.failed, true);
  assert.match(result.stderr, /could not start: .*EACCES/);
});

test('a missing working directory is named', async () => {
  const result = await runProcess('true', [], { cwd: '/nonexistent/hearth-dir' });
  assert.equal(result.failed, true);
  assert.match(result.stderr, /working directory \/nonexistent\/hearth-dir does not exist/);
});

test('a timeout kills the child and says so', async () => {
  const started = Date.now();
  const result = await runProcess('sh', ['-c', 'echo started; exec sleep 10'], { timeoutMs: 300 });
  assertShape(result);
  assert.ok(Date.now() - started < 5000, 'did not wait for the child');
  assert.equal(result.timedOut, true);
  assert.equal(result.failed, true);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, 'SIGTERM');
  assert.equal(result.stdout, 'started\n');
  assert.match(result.stderr, /timed out after 300 ms and was killed with SIGTERM\n$/);
});

test('a child killed by a signal reports the signal', async () => {
  const result = await runProcess('sh', ['-c', 'printf "no newline" >&2; kill -KILL $$']);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, 'SIGKILL');
  assert.equal(result.failed, true);
  assert.equal(result.timedOut, false);
  assert.match(result.stderr, /^no newline\n.*killed by SIGKILL\n$/);
});

test('input goes to stdin; without input stdin is empty, not left open', async () => {
  const withInput = await runProcess('cat', [], { input: '{"deploy":1}' });
  assert.equal(withInput.stdout, '{"deploy":1}');
  const started = Date.now();
  const without = await runProcess('cat', [], { timeoutMs: 5000 });
  assert.equal(without.stdout, '');
  assert.equal(without.timedOut, false);
  assert.ok(Date.now() - started < 4000);
});

test('inputFile is the child stdin itself (read by the child, so none of it is lost if we die); a missing one does not start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-run-input-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'signal.json'), '{"result": "whole"}');
  // The child sees a regular file on fd 0, not a pipe from this process.
  const read = await runProcess('sh', ['-c', '[ -f /dev/stdin ] && cat'], { inputFile: join(dir, 'signal.json') });
  assert.equal(read.exitCode, 0, read.stderr);
  assert.equal(read.stdout, '{"result": "whole"}');
  const missing = await runProcess('cat', [], { inputFile: join(dir, 'gone.json') });
  assert.equal(missing.failed, true);
  assert.equal(missing.exitCode, null);
  assert.match(missing.stderr, /not started: cannot read .*gone\.json: ENOENT/);
});

test('env extends process.env by default and replaces it with extendEnv false', async () => {
  process.env.AGENT_KIT_TEST_INHERITED = 'inherited';
  try {
    const script = 'printf "%s|%s" "${AGENT_KIT_TEST_INHERITED:-unset}" "${HEAT_SHELL_CONFIG:-unset}"';
    const extended = await runProcess('/bin/sh', ['-c', script], { env: { HEAT_SHELL_CONFIG: '/tmp/hc' } });
    assert.equal(extended.stdout, 'inherited|/tmp/hc');
    const replaced = await runProcess('/bin/sh', ['-c', script], { env: { HEAT_SHELL_CONFIG: '/tmp/hc' }, extendEnv: false });
    assert.equal(replaced.stdout, 'unset|/tmp/hc');
  } finally {
    delete process.env.AGENT_KIT_TEST_INHERITED;
  }
});

test('cwd and shell', async (t) => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'agent-kit-run-')));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const result = await runProcess('pwd', [], { cwd: dir });
  assert.equal(result.stdout, `${dir}\n`);
  assert.equal(result.cwd, dir);
  const shell = await runProcess('echo $((6 * 7)) && exit 3', [], { shell: true });
  assert.equal(shell.stdout, '42\n');
  assert.equal(shell.exitCode, 3);
});

test('a timeout stops the whole tree: a grandchild holding stdout does not keep us waiting', async () => {
  const started = Date.now();
  const result = await runProcess('sh', ['-c', 'sleep 20; echo never'], { timeoutMs: 300 });
  const elapsed = Date.now() - started;
  assert.ok(elapsed < 3000, `took ${elapsed} ms`);
  assert.equal(result.timedOut, true);
  assert.equal(result.failed, true);
  assert.equal(result.stdout, '');
});

test('children that ignore SIGTERM get SIGKILL after killGraceMs', async () => {
  const started = Date.now();
  const result = await runProcess('sh', ['-c', 'trap "" TERM; sleep 20; echo never'], { timeoutMs: 200, killGraceMs: 300 });
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 450 && elapsed < 4000, `took ${elapsed} ms`);
  assert.equal(result.timedOut, true);
  assert.equal(result.signal, 'SIGKILL');
  assert.match(result.stderr, /timed out after 200 ms and was killed with SIGKILL\n$/);
});

test('a grandchild that ignores SIGTERM and does not hold stdout still gets SIGKILL after the child ended', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'run-process-'));
  const pidFile = join(dir, 'grandchild.pid');
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const grandchild = `trap "" TERM; echo $$ > ${pidFile}; exec sleep 30`;
  // The child dies on the SIGTERM at once, so the result comes before the grace ends.
  const result = await runProcess('sh', ['-c', `sh -c '${grandchild}' >/dev/null 2>&1 & wait`], { timeoutMs: 300, killGraceMs: 300 });
  assert.equal(result.timedOut, true);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  const state = (): string => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    } catch {
      return 'gone';
    }
  };
  t.after(() => ['S', 'R'].includes(state()) && process.kill(pid, 'SIGKILL'));
  // A zombie (Z) is dead: re-parented to init, which may be slow to reap it.
  for (const deadline = Date.now() + 2000; !['Z', 'gone'].includes(state()) && Date.now() < deadline;)
    await new Promise((resolve) => setTimeout(resolve, 20));
  assert.ok(['Z', 'gone'].includes(state()), `grandchild ${pid} is ${state()}, 1.7 s after the 300 ms grace`);
});

test('a child that exits by itself on SIGTERM still counts as timed out and failed', async () => {
  const result = await runProcess('sh', ['-c', 'trap "exit 0" TERM; while :; do sleep 0.05; done'], { timeoutMs: 200, killGraceMs: 3000 });
  assert.equal(result.timedOut, true);
  assert.equal(result.failed, true);
  assert.equal(result.exitCode, 0);
  assert.match(result.stderr, /timed out after 200 ms and exited with code 0 after SIGTERM\n$/);
});

test('inheritFd3 hands this process fd 3 to the child (a hook passes the progress channel on)', async () => {
  const { spawn } = await import('node:child_process');
  // A parent with fd 3 piped back to us runs a child through runProcess that writes to its fd 3.
  const script = `
    import { runProcess } from ${JSON.stringify(new URL('./run-process.ts', import.meta.url).pathname)};
    const result = await runProcess('sh', ['-c', 'echo progress-line >&3; echo done'], { inheritFd3: true });
    process.stdout.write(result.stdout);
  `;
  const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  let fd3 = '';
  let stdout = '';
  parent.stdio[3]!.on('data', (chunk: Buffer) => (fd3 += chunk.toString()));
  parent.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => parent.on('close', resolve));
  assert.equal(code, 0);
  assert.equal(stdout, 'done\n');
  assert.equal(fd3, 'progress-line\n');
});

test('a NUL byte in an argument or a variable is a failed result, not an exception (no C string can hold one)', async () => {
  for (const [args, env] of [
    [['a\0b'], {}],
    [['fine'], { VALUE: 'x\0y' }],
  ] as const) {
    const result = await runProcess('echo', [...args], { env });
    assertShape(result);
    assert.equal(result.failed, true);
    assert.equal(result.exitCode, null);
    assert.match(result.stderr, /could not start: .* contains a NUL byte\n$/);
  }
});

test('a command that writes more than 100 MB runs to its end; the last 16 MiB are kept and the cut counted', async () => {
  // execa's 100 MB maxBuffer killed it with SIGPIPE before its last line.
  const result = await runProcess('sh', ['-c', `head -c 105000000 /dev/zero | tr '\\0' o; echo " LAST OUT"; echo done >&2`]);
  assert.equal(result.signal, null, result.stderr.slice(-300));
  assert.equal(result.exitCode, 0);
  assert.equal(result.failed, false);
  assert.equal(Buffer.byteLength(result.stdout), 16 * 1024 * 1024);
  assert.ok(result.stdout.endsWith('ooo LAST OUT\n'));
  assert.equal(result.stdoutCutChars, 105_000_010 - 16 * 1024 * 1024);
  assert.equal(result.stderr, 'done\n');
  assert.equal(result.stderrCutChars, 0);
});

test('OutputTail keeps the last bytes from a whole character and counts the characters dropped before them', () => {
  const accents = new OutputTail(5);
  for (const char of 'éééééééééé') accents.push(Buffer.from(char));
  assert.deepEqual(accents.result(), { text: 'éé', cutChars: 8 });

  const emoji = new OutputTail(6);
  emoji.push(Buffer.from('😀😀😀'));
  // Counted in UTF-16 characters, as JavaScript's string length counts the kept text.
  assert.deepEqual(emoji.result(), { text: '😀', cutChars: 4 });

  const whole = new OutputTail(100);
  whole.push(Buffer.from('short\n'));
  assert.deepEqual(whole.result(), { text: 'short\n', cutChars: 0 });
});

test('a command that starts a daemon: the result comes when it exits, and the daemon outlives the run and its timeout', async (t) => {
  // The timeout must outlast the run (a shell start, then the 300 ms grace) on a loaded machine too: it is set from how
  // long the same shell takes here and now. A result that waits for the daemon still comes only with the timeout.
  const baselineStarted = Date.now();
  assert.equal((await runProcess('sh', ['-c', 'sleep 0 & echo $!; echo started >&2'])).exitCode, 0);
  const timeoutMs = 2000 + 4 * (Date.now() - baselineStarted);
  const started = Date.now();
  // The daemon keeps stdout and stderr open: before, the result waited for it (or for the timeout, which killed it).
  const result = await runProcess('sh', ['-c', 'sleep 60 & echo $!; echo started >&2'], { timeoutMs, outputGraceMs: 300 });
  const elapsed = Date.now() - started;
  const daemon = Number(result.stdout.trim());
  t.after(() => isProcessAlive(daemon) && process.kill(daemon, 'SIGKILL'));
  assert.equal(result.exitCode, 0);
  assert.equal(result.timedOut, false, `took ${elapsed} ms`);
  assert.equal(result.failed, false);
  assert.equal(result.stderr, 'started\n');
  assert.ok(daemon > 0, result.stdout);
  // Past the timeout: nothing stops the daemon.
  await new Promise((resolve) => setTimeout(resolve, timeoutMs + 500 - elapsed));
  assert.ok(isProcessAlive(daemon), `daemon ${daemon} was stopped`);
});

test('output written within the grace after the child exited is kept', async () => {
  const result = await runProcess('sh', ['-c', '(sleep 0.2; echo late) & echo early'], { outputGraceMs: 3000 });
  assert.equal(result.exitCode, 0);
  assert.equal(result.stdout, 'early\nlate\n');
});

test('stop: aborting stops the child and its tree; aborted before the start, nothing runs', async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 200);
  const started = Date.now();
  const result = await runProcess('sh', ['-c', 'echo up; sleep 20; echo never'], { stop: controller.signal, killGraceMs: 1000 });
  assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, 'SIGTERM');
  assert.equal(result.timedOut, false);
  assert.equal(result.failed, true);
  assert.equal(result.stdout, 'up\n');
  assert.match(result.stderr, /killed by SIGTERM\n$/);

  const notStarted = await runProcess('touch', ['/nonexistent-dir/x'], { stop: AbortSignal.abort('the hook received SIGTERM') });
  assertShape(notStarted);
  assert.equal(notStarted.failed, true);
  assert.equal(notStarted.exitCode, null);
  assert.equal(notStarted.stderr, 'touch /nonexistent-dir/x: not started: the hook received SIGTERM\n');
});

test('input a child does not read is no error: its exit is the result', async () => {
  const result = await runProcess('true', [], { input: 'x'.repeat(1024 * 1024) });
  assert.equal(result.exitCode, 0);
  assert.equal(result.failed, false);
});
