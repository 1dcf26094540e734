import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { hookMain, type HookDefinition } from './hook.ts';
import { hookResult, statusCode } from './result.ts';
import type { ProcessResult } from '@hearth/agent-kit';

function io(stdin: string, argv: string[] = []) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  return { io: { argv, env: {}, readStdin: () => Promise.resolve(stdin), stdout, stderr }, out: () => out, err: () => err };
}

const echoHook: HookDefinition = {
  group: 'echo',
  usage: 'usage: echo < deployment.json',
  run: ({ deployment }) =>
    Promise.resolve(hookResult({ stdout: String(deployment.config), stderr: '', status: 0 }, { deploy_stdout: 'lost', out: 1 })),
};

test('hookMain prints one result line; deploy_* keys win over outputs of the same name', async () => {
  const t = io(JSON.stringify({ id: 'x', config: 'hello' }));
  assert.equal(await hookMain(echoHook, t.io), 0);
  assert.deepEqual(JSON.parse(t.out()), { deploy_stdout: 'hello', out: 1, deploy_stderr: '', deploy_status_code: 0 });
  assert.match(t.err(), /"msg":"running deployment"/);
});

test('--help prints usage and reads nothing', async () => {
  const t = io('ignored', ['--help']);
  assert.equal(await hookMain(echoHook, t.io), 0);
  assert.equal(t.out(), 'usage: echo < deployment.json\n');
});

test('an unusable deployment, or a hook that throws, still prints a failed result and returns 1', async () => {
  const bad = io('[]');
  assert.equal(await hookMain(echoHook, bad.io), 1);
  const result = JSON.parse(bad.out());
  assert.equal(result.deploy_status_code, 1);
  assert.match(result.deploy_stderr, /^echo hook: stdin must be one JSON object/);
  const throwing = io(JSON.stringify({ id: 'x' }));
  const hook: HookDefinition = { ...echoHook, run: () => Promise.reject(new Error('EACCES: /var/lib/x')) };
  assert.equal(await hookMain(hook, throwing.io), 1);
  assert.match(JSON.parse(throwing.out()).deploy_stderr, /EACCES/);
});

test('statusCode: exit code, 128+signal, 124 for a timeout that exited 0, 1 when it never started', () => {
  const base: ProcessResult = {
    command: 'x',
    cwd: '/',
    exitCode: 3,
    signal: null,
    stdout: '',
    stderr: '',
    durationMs: 1,
    timedOut: false,
    failed: true,
  };
  assert.equal(statusCode(base), 3);
  assert.equal(statusCode({ ...base, exitCode: null, signal: 'SIGKILL' }), 137);
  assert.equal(statusCode({ ...base, exitCode: 0, timedOut: true }), 124);
  assert.equal(statusCode({ ...base, exitCode: null }), 1);
});
