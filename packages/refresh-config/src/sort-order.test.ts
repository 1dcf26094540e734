import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { compareBytes, compareNumericThenBytes } from './sort-order.ts';

const NAMES = ['9-b', '10-a', '010-a', '-1-x', 'abc', '_z', 'Z', '2.5-y', '-', '-a', '0', '007', '7', '1a', '1', '-0', '00', 'é', 'e'];

test('orders names as LANG=C sort -n does (checked against the real sort)', () => {
  const sorted = spawnSync('sort', ['-n'], {
    input: NAMES.join('\n') + '\n',
    env: { ...process.env, LANG: 'C', LC_ALL: 'C' },
    encoding: 'utf8',
  });
  assert.equal(sorted.status, 0, sorted.stderr);
  assert.deepEqual([...NAMES].sort(compareNumericThenBytes), sorted.stdout.trimEnd().split('\n'));
});

test('a numeric prefix wins over bytes; ties fall back to C byte order', () => {
  assert.deepEqual(['10-a', '9-b', '09-a'].sort(compareNumericThenBytes), ['09-a', '9-b', '10-a']);
  assert.deepEqual(['b', 'B', 'a'].sort(compareNumericThenBytes), ['B', 'a', 'b']);
  assert.ok(compareNumericThenBytes('-5', '0') < 0, 'a leading - is a negative number');
});

test('byte order puts upper case and digits before lower case, and compares UTF-8 bytes', () => {
  assert.deepEqual(['b', 'a', 'Z', '1', 'é'].sort(compareBytes), ['1', 'Z', 'a', 'b', 'é']);
});
