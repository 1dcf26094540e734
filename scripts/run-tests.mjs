#!/usr/bin/env node
// Runs every test file (unit tests beside the code, cross-package tests in test/, never the
// benchmarks) with node's test runner through tsx. Node 20's --test does not expand globs.
// When HEARTH_TEST_POSTGRES_URL is set, the server's tests and test/e2e run a second time against
// PostgreSQL (HEARTH_TEST_STORE=postgres). Arguments filter the files by substring, in both passes.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
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
delete env.HEARTH_TEST_STORE; // the first pass is the whole suite on SQLite
const run = (testFiles, extraEnv) =>
  spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', ...testFiles], {
    cwd: root,
    stdio: 'inherit',
    env: { ...env, ...extraEnv },
  }).status ?? 1;
const status = run(files, {});

// With a PostgreSQL to test against (.ci/run starts one: scripts/postgres.ts), the server suite
// runs a second time, each app and server on a fresh database of it.
let postgresStatus = 0;
if (process.env.HEARTH_TEST_POSTGRES_URL) {
  const serverFiles = files.filter((f) => f.startsWith(join('packages', 'server') + sep) || f.startsWith(join('test', 'e2e') + sep));
  if (serverFiles.length === 0) {
    console.log('\n== server suite against PostgreSQL: no test file matches the filter');
  } else {
    console.log(`\n== server suite against PostgreSQL (${serverFiles.length} files, HEARTH_TEST_STORE=postgres)`);
    postgresStatus = run(serverFiles, { HEARTH_TEST_STORE: 'postgres' });
    const outcome = (code) => (code === 0 ? 'passed' : `FAILED (exit ${code})`);
    console.log(`\n== SQLite pass ${outcome(status)}; PostgreSQL pass ${outcome(postgresStatus)}`);
  }
}
process.exit(status !== 0 ? status : postgresStatus);
