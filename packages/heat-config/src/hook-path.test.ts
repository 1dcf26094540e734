import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { findHook, hookName } from './hook-path.ts';
import { tempDir, writeExecutable } from './test-support.ts';

test('hookName keeps letters, digits, - and _ only, as 55-heat-config does', () => {
  assert.equal(hookName('Heat::Ungrouped'), 'HeatUngrouped');
  assert.equal(hookName('docker-compose'), 'docker-compose');
  assert.equal(hookName('apply_config'), 'apply_config');
  assert.equal(hookName('../../bin/sh'), 'binsh');
  assert.equal(hookName('a b\tc.d/e'), 'abcde');
  assert.equal(hookName('café2'), 'café2', 'Python isalnum() accepts non-ASCII letters');
  assert.equal(hookName('::'), '');
});

test('findHook takes the first dir holding the hook and skips missing or empty dirs', (t) => {
  const root = tempDir(t);
  const first = join(root, 'first');
  const second = join(root, 'second');
  mkdirSync(first);
  writeExecutable(join(second, 'script'), '#!/bin/sh\n');
  writeExecutable(join(second, 'HeatUngrouped'), '#!/bin/sh\n');
  assert.equal(findHook('script', ['', join(root, 'missing'), first, second]), join(second, 'script'));
  writeExecutable(join(first, 'script'), '#!/bin/sh\n');
  assert.equal(findHook('script', [first, second]), join(first, 'script'));
  assert.equal(findHook('Heat::Ungrouped', [first, second]), join(second, 'HeatUngrouped'));
  assert.equal(findHook('puppet', [first, second]), undefined);
  assert.equal(findHook('::', [first, second]), undefined, 'a group that sanitises to nothing never names the dir itself');
});
