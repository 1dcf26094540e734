import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signalBody } from './body.ts';
import { parseCfnSignalArgs } from './options.ts';

test('defaults are the original’s: SUCCESS, Configuration Complete, its data text, 3 retries, 30 s', () => {
  const options = parseCfnSignalArgs(['http://h/url']);
  assert.equal(options.status, 'SUCCESS');
  assert.equal(options.reason, 'Configuration Complete');
  assert.equal(options.data, 'Application has completed configuration.');
  assert.equal(options.uniqueId, undefined);
  assert.deepEqual([options.retries, options.timeoutMs, options.retryDelayMs], [3, 30_000, 1000]);
  assert.ok(Object.isFrozen(options));
});

test('status: -s exactly true is SUCCESS; -e wins (0 is SUCCESS); --exit is the deprecated -e; an empty -e falls back to -s', () => {
  assert.equal(parseCfnSignalArgs(['-s', 'True', 'u']).status, 'FAILURE');
  assert.equal(parseCfnSignalArgs(['-s', 'false', 'u']).status, 'FAILURE');
  assert.equal(parseCfnSignalArgs(['-s', 'false', '-e', '0', 'u']).status, 'SUCCESS');
  assert.equal(parseCfnSignalArgs(['-e', '3', 'u']).status, 'FAILURE');
  assert.equal(parseCfnSignalArgs(['--exit-code', '1', 'u']).status, 'FAILURE');
  const deprecated = parseCfnSignalArgs(['--exit', '0', '-s', 'no', 'u']);
  assert.deepEqual([deprecated.status, deprecated.deprecatedExit], ['SUCCESS', true]);
  assert.equal(parseCfnSignalArgs(['-e', '', 'u']).status, 'SUCCESS');
});

test('-d @file reads the data from the file; a missing file, a missing URL and bad numbers are usage errors (2)', () => {
  const file = join(mkdtempSync(join(tmpdir(), 'cfn-signal-')), 'data.txt');
  writeFileSync(file, 'line 1\nline 2\n');
  assert.equal(parseCfnSignalArgs(['-d', `@${file}`, 'u']).data, 'line 1\nline 2\n');
  assert.equal(parseCfnSignalArgs(['-d', '{"json": "stays a string"}', 'u']).data, '{"json": "stays a string"}');
  const usage = (argv: string[], pattern: RegExp) =>
    assert.throws(
      () => parseCfnSignalArgs(argv),
      (error: { exitCode: number; message: string }) => error.exitCode === 2 && pattern.test(error.message),
    );
  usage(['-d', `@${file}.missing`, 'u'], /cannot read .*data\.txt\.missing/);
  usage([], /the wait condition URL is required/);
  usage(['a', 'b'], /one URL expected, got 2/);
  usage(['--retries', 'x', 'u'], /--retries 'x' must be a number/);
  usage(['--bogus', 'u'], /Unknown option '--bogus'/);
});
test('values starting with a dash that argparse takes are values: negative numbers, "-", words with a space', () => {
  const failed = parseCfnSignalArgs(['-e', '-1', '-r', '-- install failed: see log', '-d', '-', '-i', '-5.5', 'u']);
  assert.deepEqual(
    [failed.status, failed.reason, failed.data, failed.uniqueId, failed.url],
    ['FAILURE', '-- install failed: see log', '-', '-5.5', 'u'],
  );
  assert.equal(parseCfnSignalArgs(['--reason', '--retries 2', 'u']).reason, '--retries 2');
  // argparse refuses these too: a flag-like word without a space, a known short flag, a long flag with `=`.
  for (const argv of [
    ['-r', '-x', 'u'],
    ['-r', '-k y', 'u'],
    ['-r', '--reason=a b', 'u'],
  ]) {
    assert.throws(
      () => parseCfnSignalArgs(argv),
      (error: { exitCode: number }) => error.exitCode === 2,
      argv.join(' '),
    );
  }
});

test('the body is byte for byte what the original’s json.dumps writes, non-ASCII escaped', () => {
  assert.equal(
    signalBody({ Status: 'SUCCESS', Reason: 'Configuration Complete', UniqueId: 'vm1', Data: 'a "q" é\n' }),
    '{"Status": "SUCCESS", "Reason": "Configuration Complete", "UniqueId": "vm1", "Data": "a \\"q\\" \\u00e9\\n"}',
  );
});
