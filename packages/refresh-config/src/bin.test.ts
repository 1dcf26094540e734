import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readTrace, tempDir, tracingScript } from './test-support.ts';

const BIN = fileURLToPath(new URL('../bin/os-refresh-config.js', import.meta.url));
const DIB_RUN_PARTS = fileURLToPath(new URL('../bin/dib-run-parts.js', import.meta.url));

function run(bin: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  return spawnSync(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 30_000 });
}

test('--print-base and --print-phases print and exit 0', (t) => {
  const root = tempDir(t);
  assert.deepEqual([run(BIN, ['--print-base'], { OS_REFRESH_CONFIG_BASE_DIR: '/srv/orc' }).stdout, 0], ['/srv/orc\n', 0]);
  const printed = run(BIN, ['--print-base'], { HEARTH_ROOT: root, OS_REFRESH_CONFIG_BASE_DIR: '' });
  assert.equal(printed.stdout, `${root}/usr/libexec/os-refresh-config\n`);
  const phases = run(BIN, ['--print-phases']);
  assert.equal(phases.status, 0);
  assert.equal(phases.stdout, 'pre-configure\tconfigure\tpost-configure\tmigration\n');
});

test('--help exits 0; a bad flag exits 2 with the usage', () => {
  const help = run(BIN, ['--help']);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--lockfile LOCKFILE/);
  const bad = run(BIN, ['--log-level', 'LOUD']);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /usage: os-refresh-config[\s\S]*error: argument --log-level: invalid choice: 'LOUD'/);
});

test('runs the phases with one JSON log record per line, and exits 1 after error.d on failure', (t) => {
  const root = tempDir(t);
  const base = join(root, 'base');
  const trace = join(root, 'trace');
  tracingScript(join(base, 'configure.d', '10-ok'), 'configure');
  tracingScript(join(base, 'post-configure.d', '10-fail'), 'post-configure', 'exit 2');
  tracingScript(join(base, 'error.d', '10-x'), 'error.d');
  const result = run(BIN, ['--lockfile', join(root, 'lock')], { OS_REFRESH_CONFIG_BASE_DIR: base, TRACE: trace });
  assert.equal(result.status, 1, result.stderr);
  assert.deepEqual(readTrace(trace), ['configure', 'post-configure', 'error.d']);
  const records = result.stderr
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { msg: string; seconds?: number; script?: string });
  assert.ok(records.some((r) => r.msg === 'Script completed' && r.script === '10-ok' && typeof r.seconds === 'number'));
  assert.equal(records.at(-1)?.msg, 'Aborting...');
});

test('--log-format text prints dib-run-parts lines with the profiling table', (t) => {
  const root = tempDir(t);
  const base = join(root, 'base');
  mkdirSync(base);
  tracingScript(join(base, 'configure.d', '10-ok'), 'configure');
  const result = run(BIN, ['--log-format', 'text', '--lockfile', join(root, 'lock')], {
    OS_REFRESH_CONFIG_BASE_DIR: base,
    TRACE: join(root, 't'),
  });
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stderr, /^dib-run-parts .* Running .*\/configure\.d\/10-ok$/m);
  assert.match(result.stderr, /^dib-run-parts .* 10-ok {37} +\d+\.\d{3}$/m);
  assert.match(result.stderr, /INFO os-refresh-config: Completed phase configure/);
});

test('dib-run-parts: --list prints full paths; a missing dir is a usage error (exit 1); failures keep their status', (t) => {
  const root = tempDir(t);
  const dir = join(root, 'd');
  tracingScript(join(dir, '20-b'), 'b', 'exit 5');
  tracingScript(join(dir, '10-a'), 'a');
  assert.equal(run(DIB_RUN_PARTS, ['--list', dir]).stdout, `${dir}/10-a\n${dir}/20-b\n`);
  const missing = run(DIB_RUN_PARTS, [join(root, 'nope')]);
  assert.equal(missing.status, 1);
  assert.match(missing.stderr, /must exist and be a directory[\s\S]*Usage: dib-run-parts/);
  const failed = run(DIB_RUN_PARTS, [dir], { TRACE: join(root, 'trace') });
  assert.equal(failed.status, 5);
  assert.deepEqual(readTrace(join(root, 'trace')), ['a', 'b']);
});

test('dib-run-parts: an environment file that sets `prefix` (common in build settings) changes nothing of the run', (t) => {
  const root = tempDir(t);
  const dir = join(root, 'd');
  mkdirSync(join(root, 'environment.d'));
  writeFileSync(join(root, 'environment.d', '10-build'), 'prefix=/usr\nexport FROM_ENV_D=yes\n');
  writeFileSync(join(root, 'environment.d', '20-more'), 'true\n');
  tracingScript(join(dir, '10-a'), '${FROM_ENV_D}');
  const result = run(DIB_RUN_PARTS, [dir], { TRACE: join(root, 'trace') });
  assert.equal(result.status, 0, result.stderr);
  assert.deepEqual(readTrace(join(root, 'trace')), ['yes']);
  const sourcing = result.stderr.split('\n').filter((line) => line.includes('Sourcing environment file'));
  assert.equal(sourcing.length, 2);
  for (const line of sourcing) assert.match(line, /^dib-run-parts /);
});
