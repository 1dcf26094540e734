import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { OLD_BASE_DIR, resolveBaseDir } from './base-dir.ts';
import { tempDir } from './test-support.ts';

test('OS_REFRESH_CONFIG_BASE_DIR wins; otherwise the default under HEARTH_ROOT', (t) => {
  const root = tempDir(t);
  assert.deepEqual(resolveBaseDir({ OS_REFRESH_CONFIG_BASE_DIR: '/srv/orc', HEARTH_ROOT: root }), { dir: '/srv/orc', deprecated: false });
  assert.deepEqual(resolveBaseDir({ HEARTH_ROOT: root }), { dir: join(root, '/usr/libexec/os-refresh-config'), deprecated: false });
});

test('the old base dir is used, flagged deprecated, only when it exists and the new one does not', (t) => {
  const root = tempDir(t);
  mkdirSync(join(root, OLD_BASE_DIR), { recursive: true });
  assert.deepEqual(resolveBaseDir({ HEARTH_ROOT: root }), { dir: join(root, OLD_BASE_DIR), deprecated: true });
  mkdirSync(join(root, '/usr/libexec/os-refresh-config'), { recursive: true });
  assert.deepEqual(resolveBaseDir({ HEARTH_ROOT: root }), { dir: join(root, '/usr/libexec/os-refresh-config'), deprecated: false });
});
