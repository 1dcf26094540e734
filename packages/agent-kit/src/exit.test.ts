import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitError } from './exit.ts';

const exitModule = new URL('./exit.ts', import.meta.url).pathname;
const scriptDir = mkdtempSync(join(tmpdir(), 'agent-kit-exit-'));
test.after(() => rmSync(scriptDir, { recursive: true, force: true }));
let scripts = 0;

/** Runs `body` as an agent's main through runMain in a real node process. */
function runAgent(body: string, options: { args?: string[]; name?: string; env?: NodeJS.ProcessEnv } = {}) {
  const script = `import { runMain, ExitError } from ${JSON.stringify(exitModule)};
runMain(async (argv) => { ${body} }${options.name ? `, { name: ${JSON.stringify(options.name)} }` : ''});`;
  const env = { ...process.env, ...options.env };
  delete env.NODE_EXTRA_CA_CERTS;
  scripts += 1;
  const scriptPath = join(scriptDir, `agent-${scripts}.ts`);
  writeFileSync(scriptPath, script);
  const child = spawnSync(process.execPath, ['--import', 'tsx', scriptPath, ...(options.args ?? [])], {
    encoding: 'utf8',
    env,
    maxBuffer: 16 * 1024 * 1024,
  });
  return { status: child.status, stdout: child.stdout, stderr: child.stderr };
}

test('ExitError carries its code and message', () => {
  const error = new ExitError(64, 'unknown collector "foo"');
  assert.ok(error instanceof Error);
  assert.equal(error.name, 'ExitError');
  assert.equal(error.exitCode, 64);
  assert.equal(error.code, 64);
  assert.equal(error.message, 'unknown collector "foo"');
});

test('main returning a number or nothing exits with it (nothing -> 0) and gets the arguments', () => {
  const returned = runAgent('process.stdout.write(JSON.stringify(argv)); return 3;', { args: ['--one-time', 'heat'] });
  assert.equal(returned.status, 3);
  assert.equal(returned.stdout, '["--one-time","heat"]');
  assert.equal(returned.stderr, '');
  assert.equal(runAgent('').status, 0);
});

test('an ExitError prints its message on stderr and exits with its code', () => {
  const result = runAgent("throw new ExitError(4, 'lock /run/x.lock is held by pid 12');");
  assert.equal(result.status, 4);
  assert.equal(result.stderr, 'lock /run/x.lock is held by pid 12\n');
  const named = runAgent("throw new ExitError(2, 'bad flag');", { name: 'os-refresh-config' });
  assert.equal(named.stderr, 'os-refresh-config: bad flag\n');
  const silent = runAgent("throw new ExitError(5, '');");
  assert.equal(silent.status, 5);
  assert.equal(silent.stderr, '');
});

test('any other error prints its message and exits 1; HEARTH_DEBUG adds the stack', () => {
  const result = runAgent("throw new TypeError('cannot read metadata');");
  assert.equal(result.status, 1);
  assert.equal(result.stderr, 'cannot read metadata\n');
  const debug = runAgent("throw new TypeError('cannot read metadata');", { env: { HEARTH_DEBUG: '1' } });
  assert.equal(debug.status, 1);
  assert.match(debug.stderr, /^cannot read metadata\nTypeError: cannot read metadata\n\s+at /);
  const thrownString = runAgent("throw 'plain string';");
  assert.equal(thrownString.status, 1);
  assert.equal(thrownString.stderr, 'plain string\n');
});

test('output written before exiting is not lost, and pending timers do not keep the process alive', () => {
  const result = runAgent("process.stdout.write('x'.repeat(4 * 1024 * 1024)); setTimeout(() => {}, 60_000); return 0;");
  assert.equal(result.status, 0);
  assert.equal(result.stdout.length, 4 * 1024 * 1024);
});

test('an error message quoting a signed URL or a malformed document is printed without the secret', () => {
  const signed = runAgent(
    "throw new ExitError(1, 'GET http://127.0.0.1:9/v1/?Action=DescribeStackResource&Signature=S3CRETSIG&AWSAccessKeyId=AK answered 403');",
    { name: 'cfn-get-metadata' },
  );
  assert.equal(signed.status, 1);
  assert.doesNotMatch(signed.stderr, /S3CRETSIG/);
  assert.match(signed.stderr, /Signature=\*\*\*&AWSAccessKeyId=AK answered 403/);
  const parsed = runAgent('JSON.parse(\'{"db_password": S3cretPW}\');');
  assert.equal(parsed.status, 1);
  assert.doesNotMatch(parsed.stderr, /S3cret/);
});
