import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRefreshArgs, UsageError } from './options.ts';

test('defaults match os-refresh-config', () => {
  assert.deepEqual(parseRefreshArgs([]), {
    printBase: false,
    printPhases: false,
    logLevel: 'INFO',
    logFormat: 'json',
    lockFile: undefined,
    timeoutSeconds: undefined,
    help: false,
  });
});

test('accepts both value spellings and unique prefixes, as argparse does', () => {
  const options = parseRefreshArgs(['--lockfile=/tmp/l', '--timeout', '5', '--log-l', 'DEBUG', '--print-b']);
  assert.equal(options.lockFile, '/tmp/l');
  assert.equal(options.timeoutSeconds, 5);
  assert.equal(options.logLevel, 'DEBUG');
  assert.equal(options.printBase, true);
  assert.equal(parseRefreshArgs(['--timeout', '0']).timeoutSeconds, undefined, 'zero means no timeout');
  assert.ok(Object.isFrozen(options));
});

test('refuses what argparse refuses, saying what was wrong', () => {
  assert.throws(
    () => parseRefreshArgs(['--print']),
    (e: Error) => e instanceof UsageError && /ambiguous option: --print/.test(e.message),
  );
  assert.throws(() => parseRefreshArgs(['--log-level', 'TRACE']), /invalid choice: 'TRACE'/);
  assert.throws(() => parseRefreshArgs(['--timeout', 'soon']), /invalid int value: 'soon'/);
  assert.throws(() => parseRefreshArgs(['--timeout=-1']), /must not be negative/);
  assert.throws(() => parseRefreshArgs(['--bogus']), UsageError);
  assert.throws(() => parseRefreshArgs(['extra']), UsageError);
});
