import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loggerRunPartsReporter, profilingTable, textRunPartsReporter, type RunPartsReporter } from './report.ts';
import { execScript } from './exec-script.ts';
import { runParts } from './run-parts.ts';
import { memoryStream, readTrace, tempDir, tracingScript, writeScript } from './test-support.ts';

/** A reporter that records events, for assertions. */
function recorder(): RunPartsReporter & { events: string[] } {
  const events: string[] = [];
  return {
    events,
    sourcing: (file) => events.push(`sourcing ${file.split('/').pop()}`),
    running: (path) => events.push(`running ${path.split('/').pop()}`),
    completed: (timing) => events.push(`completed ${timing.script}`),
    failed: (timing) => events.push(`failed ${timing.script} ${timing.exitCode}`),
    profile: (_dir, timings) => events.push(`profile ${timings.map((timing) => timing.script).join(',')}`),
  };
}

function setup(t: Parameters<typeof tempDir>[0]) {
  const root = tempDir(t);
  const dir = join(root, 'configure.d');
  mkdirSync(dir);
  const trace = join(root, 'trace');
  return { root, dir, trace, env: { ...process.env, TRACE: trace } };
}

test('runs every selected script in order with the inherited environment, and reports each', async (t) => {
  const { dir, trace, env } = setup(t);
  tracingScript(join(dir, '10-second'), '10-second $OS_CONFIG_FILES');
  tracingScript(join(dir, '02-first'), '02-first');
  tracingScript(join(dir, 'skipped.sh'), 'skipped');
  const reporter = recorder();
  const result = await runParts(dir, { env: { ...env, OS_CONFIG_FILES: '/a.json:/b.json' }, reporter });
  assert.equal(result.exitCode, 0);
  assert.deepEqual(readTrace(trace), ['02-first', '10-second /a.json:/b.json']);
  assert.deepEqual(
    result.scripts.map((s) => [s.script, s.exitCode]),
    [
      ['02-first', 0],
      ['10-second', 0],
    ],
  );
  assert.deepEqual(reporter.events, [
    'running 02-first',
    'completed 02-first',
    'running 10-second',
    'completed 10-second',
    'profile 02-first,10-second',
  ]);
});

test('the first failing script stops the directory and its status is the result', async (t) => {
  const { dir, trace, env } = setup(t);
  tracingScript(join(dir, '10-ok'), '10-ok');
  tracingScript(join(dir, '20-fails'), '20-fails', 'exit 3');
  tracingScript(join(dir, '30-never'), '30-never');
  const reporter = recorder();
  const result = await runParts(dir, { env, reporter });
  assert.equal(result.exitCode, 3);
  assert.deepEqual(readTrace(trace), ['10-ok', '20-fails']);
  assert.deepEqual(reporter.events.slice(-2), ['running 20-fails', 'failed 20-fails 3']);
  assert.ok(!reporter.events.some((event) => event.startsWith('profile')), 'no profile after a failure');
});

test('exit statuses as bash 5 reports them: 128+N for a signal, 127 for a missing script or interpreter', async (t) => {
  const { dir, env } = setup(t);
  writeScript(join(dir, '10-killed'), 'kill -TERM $$');
  assert.equal((await runParts(dir, { env, reporter: recorder() })).exitCode, 128 + 15);

  const { dir: other, env: otherEnv } = setup(t);
  writeScript(join(other, '10-bad-interpreter'), '#!/nonexistent/interpreter\n');
  assert.equal((await runParts(other, { env: otherEnv, reporter: recorder() })).exitCode, 127);

  const stderr = memoryStream();
  assert.deepEqual(await execScript(join(other, 'vanished'), { env: otherEnv, stderr }), { exitCode: 127, signal: null });
  assert.match(stderr.text(), /vanished: .*ENOENT/);
});

test('a script without a shebang is run by bash, as bash itself does', async (t) => {
  const { dir, trace, env } = setup(t);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, '10-no-shebang'), 'echo "no shebang ${BASH_VERSION:+bash}" >> "$TRACE"\n', { mode: 0o755 });
  const result = await runParts(dir, { env, reporter: recorder() });
  assert.equal(result.exitCode, 0);
  assert.deepEqual(readTrace(trace), ['no shebang bash']);

  writeFileSync(join(dir, '20-binary'), '\u0000\u0001binary\n', { mode: 0o755 });
  assert.equal((await runParts(dir, { env, reporter: recorder() })).exitCode, 126, 'an unknown binary cannot execute');
});

test('environment.d is sourced first: exported variables reach the scripts, unexported ones do not', async (t) => {
  const { root, dir, trace, env } = setup(t);
  mkdirSync(join(root, 'environment.d'));
  writeFileSync(join(root, 'environment.d', '10-first'), 'export FROM_ENV_D=one\nLOCAL_ONLY=x\n');
  writeFileSync(join(root, 'environment.d', '20-second'), 'export FROM_ENV_D="$FROM_ENV_D two"\n');
  writeFileSync(join(root, 'environment.d', 'ignored file'), 'export IGNORED=yes\n');
  tracingScript(join(dir, '10-show'), '${FROM_ENV_D} [${LOCAL_ONLY:-}] [${IGNORED:-}]');
  const reporter = recorder();
  const result = await runParts(dir, { env, reporter });
  assert.equal(result.exitCode, 0);
  assert.deepEqual(readTrace(trace), ['one two [] []']);
  assert.deepEqual(reporter.events.slice(0, 2), ['sourcing 10-first', 'sourcing 20-second']);
  assert.equal(process.env.FROM_ENV_D, undefined, 'our own environment is untouched');
});

test('a background process an environment file starts (a daemon) does not hold the pass until it ends', async (t) => {
  const { root, dir, trace, env } = setup(t);
  mkdirSync(join(root, 'environment.d'));
  const daemonPid = join(root, 'daemon.pid');
  // As `eval $(ssh-agent)`: a process that outlives the sourcing, its stdio detached from ours.
  writeFileSync(
    join(root, 'environment.d', '10-daemon'),
    `sleep 20 </dev/null >/dev/null 2>&1 &\necho $! > ${daemonPid}\nexport FROM_ENV_D=yes\n`,
  );
  tracingScript(join(dir, '10-show'), '${FROM_ENV_D}');
  const started = performance.now();
  const result = await runParts(dir, { env, reporter: recorder() });
  const waitedMs = Math.round(performance.now() - started);
  try {
    process.kill(Number(readFileSync(daemonPid, 'utf8')), 'SIGKILL');
  } catch {
    // it ended on its own: the pass waited for it
  }
  assert.equal(result.exitCode, 0);
  assert.deepEqual(readTrace(trace), ['yes']);
  assert.ok(waitedMs < 10_000, `the pass waited ${waitedMs} ms for the daemon`);
});

test('a failing environment file stops the directory before any script', async (t) => {
  const { root, dir, trace, env } = setup(t);
  mkdirSync(join(root, 'environment.d'));
  writeFileSync(join(root, 'environment.d', '10-broken'), 'false\n');
  tracingScript(join(dir, '10-never'), 'never');
  const result = await runParts(dir, { env, reporter: recorder() });
  assert.equal(result.exitCode, 1);
  assert.deepEqual(readTrace(trace), []);
});

test('a cancelled pass stops before the next script with 137', async (t) => {
  const { dir, trace, env } = setup(t);
  tracingScript(join(dir, '10-a'), 'a');
  tracingScript(join(dir, '20-b'), 'b');
  let cancelled = false;
  const reporter = { ...recorder(), completed: () => (cancelled = true) };
  const result = await runParts(dir, { env, reporter, cancelled: () => cancelled });
  assert.equal(result.exitCode, 137);
  assert.deepEqual(readTrace(trace), ['a']);
});

test('a directory that does not exist is an error naming it', async (t) => {
  const { root } = setup(t);
  await assert.rejects(runParts(join(root, 'nope')), /Scripts directory \[.*nope\] must exist and be a directory/);
});

test("text reporter writes dib-run-parts' lines and its profiling table (rows in byte order)", () => {
  const stream = memoryStream();
  const reporter = textRunPartsReporter(stream, () => new Date(2026, 0, 5, 7, 8, 9));
  reporter.running('/base/configure.d/9-b');
  reporter.completed({ script: '9-b', seconds: 0.0123 });
  reporter.profile('/base/configure.d/', [
    { script: '9-b', seconds: 0.0123 },
    { script: '10-a', seconds: 1.5 },
  ]);
  const lines = stream.text().split('\n');
  assert.match(lines[0]!, /^dib-run-parts Mon Jan {2}5 07:08:09 \S+ 2026 Running \/base\/configure\.d\/9-b$/);
  assert.match(lines[1]!, / 9-b completed$/);
  const table = lines.slice(2).map((line) => line.replace(/^dib-run-parts .*? 2026 /, ''));
  assert.deepEqual(
    table.slice(0, -1),
    profilingTable('configure.d', [
      { script: '10-a', seconds: 1.5 },
      { script: '9-b', seconds: 0.0123 },
    ]),
  );
  assert.ok(table.includes(`${'10-a'.padEnd(40)}      1.500`));
  assert.ok(table.indexOf(`${'10-a'.padEnd(40)}      1.500`) < table.indexOf(`${'9-b'.padEnd(40)}      0.012`));
  assert.ok(table.includes('Target: configure.d'));
});

test('logger reporter writes one record per event with the seconds', () => {
  const records: Array<[string, string, Record<string, unknown> | undefined]> = [];
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => records.push([level, message, fields]);
  const reporter = loggerRunPartsReporter({ debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') });
  reporter.completed({ script: '10-a', seconds: 0.25 });
  reporter.failed({ script: '20-b', seconds: 1, exitCode: 2 });
  assert.deepEqual(records, [
    ['info', 'Script completed', { script: '10-a', seconds: 0.25 }],
    ['error', 'Script failed', { script: '20-b', seconds: 1, exitCode: 2 }],
  ]);
});
