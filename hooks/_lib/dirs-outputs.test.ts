import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, statSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureDir, hookDirs, hookEnvPrefix, hookPath, toolCommand } from './dirs.ts';
import { clearOutputs, collectOutputs, MAX_OUTPUT_FILE_BYTES, MAX_OUTPUTS_TOTAL_BYTES, outputCutMarker, outputsBase } from './outputs.ts';
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

function outputsDeployment(names: string[]): Deployment {
  return {
    id: 'dep',
    name: 'dep',
    group: 'script',
    creationTime: '',
    config: null,
    inputs: [],
    outputs: names.map((name) => ({ name, errorOutput: false })),
    options: {},
  };
}

test('a 5 MiB output file: only its last MiB is read, behind a line counting the bytes cut', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outputs-'));
  const deployment = outputsDeployment(['big']);
  const base = outputsBase(dir, deployment);
  const body = Buffer.concat([Buffer.from('HEAD\n'), Buffer.alloc(5 * 1024 * 1024, 'x'), Buffer.from('\nthe end\n')]);
  writeFileSync(`${base}.big`, body);
  const value = collectOutputs(base, deployment).big!;
  const cut = body.length - MAX_OUTPUT_FILE_BYTES;
  assert.ok(value.startsWith(outputCutMarker('big', cut)), value.slice(0, 100));
  assert.equal(value.length, outputCutMarker('big', cut).length + MAX_OUTPUT_FILE_BYTES);
  assert.ok(value.endsWith('x\nthe end\n'));
  assert.ok(!value.includes('HEAD'));
});

test('outputs share 2 MiB fairly: short files stay whole, long ones split the rest; a cut never splits a character', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outputs-'));
  const deployment = outputsDeployment(['a', 'b', 'c', 'small']);
  const base = outputsBase(dir, deployment);
  for (const name of ['a', 'b', 'c']) writeFileSync(`${base}.${name}`, 'é'.repeat(1024 * 1024) + name);
  writeFileSync(`${base}.small`, 'ok\n');
  const values = collectOutputs(base, deployment);
  assert.equal(values.small, 'ok\n');
  const total = Object.values(values).reduce((sum, value) => sum + Buffer.byteLength(value), 0);
  assert.ok(total <= MAX_OUTPUTS_TOTAL_BYTES + 3 * 100, `${total} bytes`);
  for (const name of ['a', 'b', 'c']) {
    const value = values[name]!;
    assert.match(value, new RegExp(`^\\[hook: the first \\d+ bytes of output ${name} were cut\\]\\n(é)+${name}$`));
    assert.ok(!value.includes('\uFFFD'));
    assert.ok(Buffer.byteLength(value) > 600_000, `${name}: a fair share, ${Buffer.byteLength(value)} bytes`);
  }
});

test('an output that is a FIFO or a device is left out, never waited on or read without end', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outputs-'));
  const deployment = outputsDeployment(['fifo', 'zero', 'ok']);
  const base = outputsBase(dir, deployment);
  const made = spawnSync('mkfifo', [`${base}.fifo`]);
  assert.equal(made.status, 0, String(made.stderr));
  symlinkSync('/dev/zero', `${base}.zero`);
  writeFileSync(`${base}.ok`, 'fine');
  assert.deepEqual(collectOutputs(base, deployment), { ok: 'fine' });
});
