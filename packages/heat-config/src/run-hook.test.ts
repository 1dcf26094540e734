import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runHook } from './run-hook.ts';
import { signalDataFor } from './signal-data.ts';
import { exists, isRunning, tempDir, waitFor, writeExecutable } from './test-support.ts';

test('the hook gets the input on stdin; stdout, stderr and the exit code come back; fd 3 lines are progress', async (t) => {
  const dir = tempDir(t);
  const hook = writeExecutable(
    join(dir, 'hook'),
    `#!/bin/sh
cat > "${dir}/stdin"
echo "step one" >&3
echo "" >&3
printf 'step two\\r\\n' >&3
echo "fd=$HEAT_CONFIG_PROGRESS_FD"
echo oops >&2
exit 3
`,
  );
  const progress: string[] = [];
  const result = await runHook(hook, { input: '{"id":"x"}', timeoutMs: 10_000, onProgress: (line) => progress.push(line) });
  assert.equal(readFileSync(join(dir, 'stdin'), 'utf8'), '{"id":"x"}');
  assert.deepEqual([result.exitCode, result.signal, result.stdout, result.stderr, result.timedOut], [3, null, 'fd=3\n', 'oops\n', false]);
  assert.deepEqual(progress, ['step one', 'step two']);
  assert.equal(result.startError, undefined);
});

test('a hook that ignores stdin and prints invalid UTF-8 still gives a result', async (t) => {
  const dir = tempDir(t);
  const hook = writeExecutable(join(dir, 'hook'), `#!/bin/sh\nprintf 'a\\377b'\n`);
  const result = await runHook(hook, { input: 'x'.repeat(1 << 20), timeoutMs: 10_000 });
  assert.equal(result.exitCode, 0);
  assert.equal(result.stdout, 'a\uFFFDb');
});

test('past its timeout the hook and everything it started are killed, SIGKILL for what ignores SIGTERM', async (t) => {
  const dir = tempDir(t);
  const hook = writeExecutable(
    join(dir, 'hook'),
    `#!/bin/sh
echo started
sh -c 'trap "" TERM; echo $$ > "${dir}/stubborn"; while :; do sleep 0.05; done' &
setsid sh -c 'echo $$ > "${dir}/escaped"; exec sleep 60' &
sleep 60
`,
  );
  const result = await runHook(hook, { input: '', timeoutMs: 400, killGraceMs: 300 });
  assert.equal(result.timedOut, true);
  assert.equal(result.exitCode, null);
  assert.equal(result.signal, 'SIGTERM');
  assert.equal(result.stdout, 'started\n');
  assert.ok(result.durationMs >= 400 && result.durationMs < 5000, String(result.durationMs));
  const stubborn = Number(readFileSync(join(dir, 'stubborn'), 'utf8'));
  const escaped = Number(readFileSync(join(dir, 'escaped'), 'utf8'));
  await waitFor(() => !isRunning(stubborn) && !isRunning(escaped), 3000);
});

test('a hook that leaves a process holding stdout open returns after the output grace', async (t) => {
  const dir = tempDir(t);
  const hook = writeExecutable(join(dir, 'hook'), `#!/bin/sh\necho '{"a":1}'\nsleep 30 &\necho $! > "${dir}/bg"\n`);
  const started = Date.now();
  const result = await runHook(hook, { input: '', timeoutMs: 10_000, outputGraceMs: 200 });
  assert.ok(Date.now() - started < 5000);
  assert.equal(result.exitCode, 0);
  assert.equal(result.stdout, '{"a":1}\n');
  const background = Number(readFileSync(join(dir, 'bg'), 'utf8'));
  assert.ok(isRunning(background), 'a finished hook may leave services running: only a timeout kills the tree');
  process.kill(background, 'SIGKILL');
});

test('a hook that cannot be executed reports why instead of throwing', async (t) => {
  const dir = tempDir(t);
  const hook = writeExecutable(join(dir, 'hook'), '#!/bin/sh\n');
  const { chmodSync } = await import('node:fs');
  chmodSync(hook, 0o644);
  const result = await runHook(hook, { input: '{}', timeoutMs: 10_000 });
  assert.equal(result.exitCode, null);
  assert.match(result.startError ?? '', /could not start .*hook: EACCES/);
  assert.ok(!exists(join(dir, 'never')));
});

test('a timeout longer than a Node timer holds (about 24.8 days) does not kill the hook at once', async (t) => {
  const dir = tempDir(t);
  const hook = writeExecutable(join(dir, 'hook'), `#!/bin/sh\nsleep 0.3\necho finished\n`);
  // 35 days, as a deployment's options.timeout of 3000000 s gives: setTimeout would fire after 1 ms.
  const result = await runHook(hook, { input: '', timeoutMs: 3_000_000_000, killGraceMs: 100 });
  assert.deepEqual([result.timedOut, result.exitCode, result.signal, result.stdout], [false, 0, null, 'finished\n']);
  assert.equal(result.timeoutMs, 3_000_000_000, 'the result reports the timeout asked for');
});

test('a hook writing without end keeps only the last maxOutputBytes of each stream, behind a line saying so', async (t) => {
  const dir = tempDir(t);
  // 3 MB of a JSON object on stdout and 3 MB on stderr, each ending in a mark: far past a 64 KiB limit.
  const hook = writeExecutable(
    join(dir, 'hook'),
    `#!/bin/sh
printf '{"deploy_stdout": "'
head -c 3000000 /dev/zero | tr '\\0' a
printf ' OUT-END"}'
head -c 3000000 /dev/zero | tr '\\0' b >&2
printf ' ERR-END' >&2
`,
  );
  const limit = 64 * 1024;
  const result = await runHook(hook, { input: '', timeoutMs: 30_000, maxOutputBytes: limit });
  assert.equal(result.exitCode, 0);
  const [stdoutHead, stdoutKept] = [
    result.stdout.slice(0, result.stdout.indexOf('\n')),
    result.stdout.slice(result.stdout.indexOf('\n') + 1),
  ];
  assert.equal(
    stdoutHead,
    `[heat-config: the first ${3_000_000 + 19 + 10 - limit} bytes of the hook's stdout were dropped; it wrote more than ${limit} bytes]`,
  );
  assert.equal(Buffer.byteLength(stdoutKept), limit);
  assert.ok(stdoutKept.endsWith('aaa OUT-END"}'));
  assert.match(result.stderr, /^\[heat-config: the first \d+ bytes of the hook's stderr were dropped/);
  assert.ok(result.stderr.endsWith('bbb ERR-END'));
  assert.equal(result.stdoutDroppedBytes, 3_000_000 + 19 + 10 - limit);
  // A cut JSON result is no result: never a success (its deploy_status_code was in what was cut).
  const signal = signalDataFor(result);
  assert.equal(signal.deploy_stdout, result.stdout);
  assert.equal(signal.deploy_status_code, 1);
  assert.match(
    String(signal.deploy_stderr),
    /ERR-END\nheat-config: .* wrote more on stdout than heat-config keeps, so its result could not be read\n$/,
  );
});
