#!/usr/bin/env node
// Runs every test file (unit tests beside the code, cross-package tests in test/, never the
// benchmarks) with node's test runner through tsx. Node 20's --test does not expand globs.
// When HEARTH_TEST_POSTGRES_URL is set, the server's tests and test/e2e run a second time against
// PostgreSQL (HEARTH_TEST_STORE=postgres). Arguments filter the files by substring, in both passes.
// After the last pass, every failure of every pass is printed again with its error
// (scripts/failures-reporter.mjs), so that the tail of the log says what failed and why.
// The tests' temp dirs (and their agents', hooks' and servers') go under one dir of the run (TMPDIR),
// removed at the end: a test that leaves its dir behind costs nothing, and /tmp does not fill up.
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
const scratch = mkdtempSync(join(tmpdir(), 'hearth-tests-'));
chmodSync(scratch, 0o1777); // as /tmp is: what a test runs as another user can make its own dirs there
const env = { ...process.env, TMPDIR: scratch };
delete env.NODE_EXTRA_CA_CERTS;
delete env.HEARTH_TEST_STORE; // the first pass is the whole suite on SQLite
const failuresDir = mkdtempSync(join(tmpdir(), 'hearth-test-failures-'));
const failureFiles = [];
const run = (label, testFiles, extraEnv) => {
  const failures = join(failuresDir, `${failureFiles.length}.txt`);
  failureFiles.push({ label, failures });
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout'];
  reporters.push(`--test-reporter=${join(root, 'scripts', 'failures-reporter.mjs')}`, `--test-reporter-destination=${failures}`);
  return (
    spawnSync(process.execPath, ['--import', 'tsx', '--test', ...reporters, ...testFiles], {
      cwd: root,
      stdio: 'inherit',
      env: { ...env, ...extraEnv },
    }).status ?? 1
  );
};
const status = run('SQLite pass', files, {});

// With a PostgreSQL to test against (.ci/run starts one: scripts/postgres.ts), the server suite
// runs a second time, each app and server on a fresh database of it.
let postgresStatus = 0;
if (process.env.HEARTH_TEST_POSTGRES_URL) {
  const serverFiles = files.filter((f) => f.startsWith(join('packages', 'server') + sep) || f.startsWith(join('test', 'e2e') + sep));
  if (serverFiles.length === 0) {
    console.log('\n== server suite against PostgreSQL: no test file matches the filter');
  } else {
    console.log(`\n== server suite against PostgreSQL (${serverFiles.length} files, HEARTH_TEST_STORE=postgres)`);
    postgresStatus = run('PostgreSQL pass', serverFiles, { HEARTH_TEST_STORE: 'postgres' });
    const outcome = (code) => (code === 0 ? 'passed' : `FAILED (exit ${code})`);
    console.log(`\n== SQLite pass ${outcome(status)}; PostgreSQL pass ${outcome(postgresStatus)}`);
  }
}

for (const { label, failures } of failureFiles) {
  const text = existsSync(failures) ? readFileSync(failures, 'utf8').trim() : '';
  if (text) console.log(`\n== failures of the ${label}\n${text}`);
}
rmSync(failuresDir, { recursive: true, force: true });
try {
  rmSync(scratch, { recursive: true, force: true });
} catch (error) {
  // A dir a test left mounted (or owned by another user) stays; say so rather than fail the run.
  console.log(`\n== could not remove all of ${scratch}: ${error.message}`);
}
process.exit(status !== 0 ? status : postgresStatus);
