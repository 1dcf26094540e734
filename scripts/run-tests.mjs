#!/usr/bin/env node
// Runs every test file (unit tests beside the code, cross-package tests in test/, never the
// benchmarks) with node's test runner through tsx. Node 20's --test does not expand globs.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';

const root = new URL('..', import.meta.url).pathname;
const skip = new Set(['node_modules', '.git', 'bench', 'dist', '.hearth']);

function collect(dir, out) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (skip.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith('.test.ts')) out.push(relative(root, path));
  }
  return out;
}

const filter = process.argv.slice(2);
const files = [...collect(join(root, 'packages'), []), ...collect(join(root, 'hooks'), []), ...collect(join(root, 'test'), [])]
  .filter((f) => filter.length === 0 || filter.some((word) => f.includes(word)))
  .sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const env = { ...process.env };
delete env.NODE_EXTRA_CA_CERTS;
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...files], {
  cwd: root,
  stdio: 'inherit',
  env,
});
process.exit(result.status ?? 1);
