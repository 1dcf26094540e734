import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDir, hookDirs, hookEnvPrefix, hookPath, toolCommand } from './dirs.ts';
import { clearOutputs, collectOutputs, outputsBase } from './outputs.ts';
import type { Deployment } from './deployment.ts';

test('hookDirs: the originals defaults, HEAT_<GROUP>_WORKING/_OUTPUTS overrides, HEARTH_ROOT prefix', () => {
  assert.deepEqual(hookDirs('script', {}), {
    working: '/var/lib/heat-config/heat-config-script',
    outputs: '/var/run/heat-config/heat-config-script',
  });
  assert.equal(hookEnvPrefix('docker-compose'), 'HEAT_DOCKER_COMPOSE');
  assert.deepEqual(hookDirs('docker-compose', { HEAT_DOCKER_COMPOSE_WORKING: '/w', HEAT_DOCKER_COMPOSE_OUTPUTS: '/o' }), {
    working: '/w',
    outputs: '/o',
  });
  assert.equal(hookDirs('script', { HEARTH_ROOT: '/r', HEAT_SCRIPT_OUTPUTS: '' }).outputs, '/r/var/run/heat-config/heat-config-script');
  assert.equal(hookPath('X', '/d', { X: '/x', HEARTH_ROOT: '/r' }), '/x');
  assert.equal(toolCommand('HEAT_X_CMD', 'x', {}), 'x');
  assert.equal(toolCommand('HEAT_X_CMD', 'x', { HEAT_X_CMD: '/opt/x' }), '/opt/x');
});

test('ensureDir creates missing parents with mode 0700', () => {
  const root = mkdtempSync(join(tmpdir(), 'dirs-'));
  const path = ensureDir(join(root, 'a', 'b'));
  assert.equal(statSync(path).mode & 0o777, 0o700);
  assert.equal(statSync(join(root, 'a')).mode & 0o777, 0o700);
});

test('outputs: read whole files with trailing newline, missing ones omitted, names with / never read, clear removes stale ones', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outputs-'));
  const deployment: Deployment = {
    id: 'dep',
    name: 'dep',
    group: 'script',
    creationTime: '',
    config: null,
    inputs: [],
    outputs: [
      { name: 'a', errorOutput: false },
      { name: 'missing', errorOutput: false },
      { name: '../../secret', errorOutput: false },
    ],
    options: {},
  };
  const base = outputsBase(dir + '/', deployment);
  assert.equal(base, join(dir, 'dep'));
  writeFileSync(`${base}.a`, 'value\n');
  writeFileSync(join(dir, 'secret'), 'no');
  assert.deepEqual(collectOutputs(base, deployment), { a: 'value\n' });
  clearOutputs(base, deployment);
  assert.equal(existsSync(`${base}.a`), false);
  assert.equal(existsSync(join(dir, 'secret')), true);
  assert.deepEqual(collectOutputs(base, deployment), {});
});
