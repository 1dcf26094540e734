import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { listEnvironmentFiles, listParts, runPartsPattern } from './select-parts.ts';
import { tempDir, writeScript } from './test-support.ts';

test('runs only executable regular files (or symlinks to one) whose names have no dot, numbers first', (t) => {
  const root = tempDir(t);
  const dir = join(root, 'configure.d');
  writeScript(join(dir, '10-ten'), 'true');
  writeScript(join(dir, '9-nine'), 'true');
  writeScript(join(dir, 'alpha'), 'true');
  writeScript(join(dir, '20-script.sh'), 'true');
  writeScript(join(dir, '30-not-executable'), 'true', 0o644);
  writeScript(join(dir, '.hidden'), 'true');
  writeScript(join(root, 'elsewhere'), 'true');
  symlinkSync(join(root, 'elsewhere'), join(dir, '40-link'));
  symlinkSync(join(root, 'missing'), join(dir, '50-broken-link'));
  mkdirSync(join(dir, '60-subdir'));
  symlinkSync(join(dir, '60-subdir'), join(dir, '70-dir-link'));
  writeScript(join(dir, '60-subdir', '01-nested'), 'true');
  assert.deepEqual(listParts(dir), ['alpha', '9-nine', '10-ten', '40-link']);
});

test('RUN_PARTS_REGEX replaces the name filter; an invalid one is an error naming it', (t) => {
  const dir = tempDir(t);
  writeScript(join(dir, '10-a.sh'), 'true');
  writeScript(join(dir, '20-b'), 'true');
  assert.deepEqual(listParts(dir, runPartsPattern('\\.sh$')), ['10-a.sh']);
  assert.throws(() => runPartsPattern('('), /RUN_PARTS_REGEX .*"\("/);
});

test('environment.d files: regular files named [0-9A-Za-z_.-]+, executable or not, in byte order', (t) => {
  const root = tempDir(t);
  const dir = join(root, 'configure.d');
  mkdirSync(dir);
  const envDir = join(root, 'environment.d');
  mkdirSync(join(envDir, 'sub'), { recursive: true });
  for (const name of ['9-b.bash', '10-a', 'with space', 'z.sh']) writeFileSync(join(envDir, name), 'true\n');
  assert.deepEqual(listEnvironmentFiles(dir), [
    `${dir}/../environment.d/10-a`,
    `${dir}/../environment.d/9-b.bash`,
    `${dir}/../environment.d/z.sh`,
  ]);
  assert.deepEqual(listEnvironmentFiles(join(root, 'nowhere')), []);
});

test('environment.d beside a symlinked phase dir is the one beside its target, as bash resolves `<dir>/..`', (t) => {
  const root = tempDir(t);
  const real = join(root, 'real');
  mkdirSync(join(real, 'configure.d'), { recursive: true });
  mkdirSync(join(real, 'environment.d'));
  writeFileSync(join(real, 'environment.d', '10-env'), 'export FROM=real\n');
  mkdirSync(join(root, 'base'));
  symlinkSync(join(real, 'configure.d'), join(root, 'base', 'configure.d'));
  const dir = join(root, 'base', 'configure.d');
  assert.deepEqual(listEnvironmentFiles(dir), [`${dir}/../environment.d/10-env`]);
});
