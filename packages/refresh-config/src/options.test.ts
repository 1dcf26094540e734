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

test("a prefix means what it means to os-refresh-config: hearth's --log-format does not make --log ambiguous", () => {
  assert.equal(parseRefreshArgs(['--log', 'DEBUG']).logLevel, 'DEBUG');
  assert.equal(parseRefreshArgs(['--log-f', 'text']).logFormat, 'text');
  assert.equal(parseRefreshArgs(['--log-l=WARN']).logLevel, 'WARN');
});

test('a value may start with `-` where argparse takes it as one: a negative number or `-`', () => {
  assert.throws(
    () => parseRefreshArgs(['--timeout', '-5']),
    (e: Error) => e instanceof UsageError && e.message === "argument --timeout: must not be negative: '-5'",
  );
  assert.equal(parseRefreshArgs(['--lock', '-']).lockFile, '-');
  assert.throws(
    () => parseRefreshArgs(['--lockfile', '--print-base']),
    (e: Error) => e instanceof UsageError && e.message === 'argument --lockfile: expected one argument',
  );
  assert.throws(() => parseRefreshArgs(['--timeout']), /argument --timeout: expected one argument/);
  assert.throws(() => parseRefreshArgs(['--', 'extra']), UsageError);
  assert.equal(parseRefreshArgs(['--']).printBase, false);
});

test('text with a space is a value unless argparse still reads it as an option', () => {
  assert.equal(parseRefreshArgs(['--lockfile', '-my lock']).lockFile, '-my lock');
  assert.throws(() => parseRefreshArgs(['--lockfile', '--timeout=1 2']), /argument --lockfile: expected one argument/);
});
