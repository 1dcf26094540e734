import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { acquireLock } from '@hearth/agent-kit';
import { EXIT_LOCK_BUSY, PHASES, refreshConfig } from './refresh.ts';
import type { EventLogger, RunPartsReporter } from './report.ts';
import { readTrace, tempDir, tracingScript, writeScript } from './test-support.ts';

const quietReporter: RunPartsReporter = { sourcing() {}, running() {}, completed() {}, failed() {}, profile() {} };

function recordingLogger(): EventLogger & { messages: string[] } {
  const messages: string[] = [];
  const log = (message: string) => void messages.push(message);
  return { messages, debug: log, info: log, warn: log, error: log };
}

function setup(t: Parameters<typeof tempDir>[0]) {
  const root = tempDir(t);
  const baseDir = join(root, 'base');
  mkdirSync(baseDir);
  const trace = join(root, 'trace');
  const logger = recordingLogger();
  const options = {
    baseDir,
    lockFile: join(root, 'run', 'orc.lock'),
    env: { ...process.env, TRACE: trace },
    logger,
    reporter: quietReporter,
  };
  return { root, baseDir, trace, logger, options };
}

test('runs pre-configure, configure, post-configure, migration in that order; missing phases are skipped', async (t) => {
  const { baseDir, trace, options, logger } = setup(t);
  for (const phase of ['migration', 'post-configure', 'pre-configure']) tracingScript(join(baseDir, `${phase}.d`, '10-x'), phase);
  tracingScript(join(baseDir, 'error.d', '10-x'), 'error.d');
  const result = await refreshConfig(options);
  assert.equal(result.exitCode, 0);
  assert.deepEqual(readTrace(trace), ['pre-configure', 'post-configure', 'migration']);
  assert.deepEqual(
    result.phases.map((p) => p.phase),
    ['pre-configure', 'post-configure', 'migration'],
  );
  assert.ok(logger.messages.includes('Completed phase migration'));
  assert.deepEqual(PHASES, ['pre-configure', 'configure', 'post-configure', 'migration']);
  assert.ok(!existsSync(options.lockFile), 'the lock is released');
});

test('a failing phase runs error.d, skips the later phases and exits 1', async (t) => {
  const { baseDir, trace, options, logger } = setup(t);
  tracingScript(join(baseDir, 'pre-configure.d', '10-x'), 'pre-configure');
  tracingScript(join(baseDir, 'configure.d', '10-ok'), 'configure 10-ok');
  tracingScript(join(baseDir, 'configure.d', '20-fail'), 'configure 20-fail', 'exit 4');
  tracingScript(join(baseDir, 'configure.d', '30-never'), 'configure 30-never');
  tracingScript(join(baseDir, 'post-configure.d', '10-x'), 'post-configure');
  tracingScript(join(baseDir, 'error.d', '10-report'), 'error.d', 'exit 9');
  const result = await refreshConfig(options);
  assert.equal(result.exitCode, 1);
  assert.equal(result.failedPhase, 'configure');
  assert.equal(result.errorHandlers?.exitCode, 9, "error.d's own failure is ignored");
  assert.deepEqual(readTrace(trace), ['pre-configure', 'configure 10-ok', 'configure 20-fail', 'error.d']);
  const [failure, ...rest] = logger.messages.slice(-3);
  assert.match(failure!, /^during configure phase\. \[dib-run-parts .*configure\.d returned non-zero exit status 4\]$/);
  assert.deepEqual(rest, ['Calling error handlers.', 'Aborting...']);
});

test('a failing phase without error.d still exits 1', async (t) => {
  const { baseDir, options } = setup(t);
  writeScript(join(baseDir, 'configure.d', '10-fail'), 'exit 1');
  const result = await refreshConfig(options);
  assert.equal(result.exitCode, 1);
  assert.equal(result.errorHandlers, undefined);
});

test('a phase path that is not a directory fails that phase', async (t) => {
  const { baseDir, options } = setup(t);
  writeScript(join(baseDir, 'configure.d'), 'true');
  assert.equal((await refreshConfig(options)).exitCode, 1);
});

test('a held lock fails fast with 11 and runs nothing', async (t) => {
  const { baseDir, trace, options, logger } = setup(t);
  tracingScript(join(baseDir, 'configure.d', '10-x'), 'configure');
  const held = await acquireLock(options.lockFile);
  t.after(() => held.release());
  const started = Date.now();
  const result = await refreshConfig(options);
  assert.equal(result.exitCode, EXIT_LOCK_BUSY);
  assert.ok(Date.now() - started < 1000, 'no waiting');
  assert.deepEqual(readTrace(trace), []);
  assert.match(logger.messages[0]!, new RegExp(`Could not lock .*held by pid ${process.pid}`));
});

test('a lock file that cannot be created (a directory in its place) is named in one error line; nothing runs, exit 1', async (t) => {
  const { baseDir, trace, options, logger } = setup(t);
  tracingScript(join(baseDir, 'configure.d', '10-x'), 'configure');
  mkdirSync(join(options.lockFile, 'in-the-way'), { recursive: true });
  const result = await refreshConfig(options);
  assert.equal(result.exitCode, 1);
  assert.deepEqual(readTrace(trace), []);
  assert.equal(logger.messages.length, 1, logger.messages.join('\n'));
  assert.match(logger.messages[0]!, new RegExp(`^Could not create the lock file ${options.lockFile}: E[A-Z]+.*; no phase was run$`));
});

test('--timeout SIGKILLs the running script and what it started, then error.d runs and the run fails', async (t) => {
  const { root, baseDir, trace, options } = setup(t);
  const pidFile = join(root, 'grandchild.pid');
  tracingScript(
    join(baseDir, 'configure.d', '10-slow'),
    'slow started',
    `sleep 30 & echo $! > ${pidFile}\nwait\necho "slow finished" >> "$TRACE"`,
  );
  tracingScript(join(baseDir, 'configure.d', '20-never'), 'never');
  tracingScript(join(baseDir, 'error.d', '10-report'), 'error.d');
  const started = Date.now();
  const result = await refreshConfig({ ...options, timeoutSeconds: 1 });
  assert.ok(Date.now() - started < 10_000, 'ended soon after the timeout');
  assert.equal(result.exitCode, 1);
  assert.equal(result.timedOut, true);
  assert.equal(result.phases[0]?.result.exitCode, 137);
  assert.deepEqual(readTrace(trace), ['slow started', 'error.d']);
});

test('a --timeout longer than setTimeout can hold (35 days) does not kill the scripts at once', async (t) => {
  const { baseDir, trace, options } = setup(t);
  tracingScript(join(baseDir, 'configure.d', '10-brief'), 'brief started', `sleep 0.3\necho "brief finished" >> "$TRACE"`);
  const result = await refreshConfig({ ...options, timeoutSeconds: 3_000_000 });
  assert.equal(result.timedOut, false);
  assert.equal(result.exitCode, 0);
  assert.deepEqual(readTrace(trace), ['brief started', 'brief finished']);
});
