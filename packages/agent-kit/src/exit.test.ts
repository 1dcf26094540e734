import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitError, STDOUT_CLOSED_EXIT } from './exit.ts';

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

/** Writes `body` as an agent's main through runMain; returns the script's path. */
function agentScript(body: string): string {
  scripts += 1;
  const scriptPath = join(scriptDir, `agent-${scripts}.ts`);
  writeFileSync(scriptPath, `import { runMain } from ${JSON.stringify(exitModule)};\nrunMain(async () => { ${body} });`);
  return scriptPath;
}

/** The line a main waits for on stdin before it writes: sent once the reader side of its stdout or stderr is closed. */
const WAIT_FOR_GO = "await new Promise((go) => process.stdin.once('data', go)); process.stdin.destroy();";

/**
 * Runs `body` in a real node process whose stdout (or stderr) pipe the reader closes first, as `| head -1` does
 * once it has its line; resolves with the exit status and what stderr (or stdout) said.
 */
function runWithClosedPipe(body: string, closed: 'stdout' | 'stderr' = 'stdout'): Promise<{ status: number | null; other: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', agentScript(`${WAIT_FOR_GO} ${body}`)], { stdio: 'pipe' });
  const other = closed === 'stdout' ? child.stderr : child.stdout;
  let said = '';
  other.setEncoding('utf8').on('data', (chunk: string) => (said += chunk));
  child[closed].destroy();
  child.stdin.write('go\n');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) => {
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, other: said });
    });
  });
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
  // HEARTH_DEBUG's stack repeats the message.
  for (const body of [
    "throw new Error('GET http://127.0.0.1:9/x?temp_url_sig=S3CRETSIG failed');",
    'JSON.parse(\'{"db_password": S3cretPW}\');',
  ]) {
    const debug = runAgent(body, { env: { HEARTH_DEBUG: '1' } });
    assert.equal(debug.status, 1);
    assert.match(debug.stderr, /\n\s+at /, 'the stack is printed');
    assert.doesNotMatch(debug.stderr, /S3CRET|S3cret/i, debug.stderr);
  }
});

test('a stdout closed by its reader ends a succeeded main quietly with 141, after main finished its work', async () => {
  const done = join(scriptDir, 'closed-stdout-done');
  const result = await runWithClosedPipe(
    `for (let i = 0; i < 1000; i += 1) process.stdout.write('line ' + i + '\\n');
     await new Promise((resolve) => setTimeout(resolve, 200));
     (await import('node:fs')).writeFileSync(${JSON.stringify(done)}, 'done');
     return 0;`,
  );
  assert.equal(result.status, STDOUT_CLOSED_EXIT);
  assert.equal(result.other, '', 'no stack trace, no message');
  assert.equal(readFileSync(done, 'utf8'), 'done', 'main ran to its end');
});

test('a failing main keeps its own exit code and message when stdout is closed', async () => {
  const failed = await runWithClosedPipe("process.stdout.write('partial\\n'.repeat(100)); return 3;");
  assert.equal(failed.status, 3);
  assert.equal(failed.other, '');
  const thrown = await runWithClosedPipe("process.stdout.write('partial\\n'); throw new Error('lock /run/x.lock is held');");
  assert.equal(thrown.status, 1);
  assert.equal(thrown.other, 'lock /run/x.lock is held\n');
});

test('a stderr closed by its reader loses only the lines: main goes on, its stdout and exit code stay', async () => {
  const result = await runWithClosedPipe(
    "for (let i = 0; i < 100; i += 1) process.stderr.write('log ' + i + '\\n'); await new Promise((r) => setTimeout(r, 100)); process.stdout.write('result\\n'); return 0;",
    'stderr',
  );
  assert.equal(result.status, 0);
  assert.equal(result.other, 'result\n');
});

test('stdout that cannot be written (a full disk) makes a succeeded main exit 1, saying why', { skip: !existsSync('/dev/full') }, () => {
  const full = openSync('/dev/full', 'w');
  try {
    const child = spawnSync(process.execPath, ['--import', 'tsx', agentScript("process.stdout.write('x\\n'); return 0;")], {
      stdio: ['ignore', full, 'pipe'],
      encoding: 'utf8',
    });
    assert.equal(child.status, 1);
    assert.equal(child.stderr, 'cannot write stdout: ENOSPC: no space left on device, write\n');
  } finally {
    closeSync(full);
  }
});

test('every agent command run through its bin ends quietly with 141 when its stdout is closed (`cfn-hup --help | true`)', async () => {
  const packages = new URL('../../', import.meta.url).pathname;
  const bins = ['apply-config', 'cfn-tools', 'collect-config', 'config-notify', 'heat-config', 'refresh-config'].flatMap((name) =>
    readdirSync(join(packages, name, 'bin')).map((file) => join(packages, name, 'bin', file)),
  );
  assert.ok(bins.length >= 11, bins.join(' '));
  for (const bin of bins) {
    const env = { ...process.env };
    delete env.NODE_EXTRA_CA_CERTS;
    const child = spawn(process.execPath, [bin, '--help'], { stdio: ['ignore', 'pipe', 'pipe'], env });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const status = await new Promise<number | null>((resolve) => child.once('close', resolve));
    clearTimeout(timer);
    assert.equal(status, STDOUT_CLOSED_EXIT, `${bin}: ${stderr}`);
    assert.equal(stderr, '', bin);
  }
});
