import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { HookResult } from './run-hook.ts';
import { interruptedSignalData, returnCode, signalDataFor } from './signal-data.ts';

function result(overrides: Partial<HookResult>): HookResult {
  return {
    command: '/hooks/script',
    exitCode: 0,
    signal: null,
    stdout: '',
    stderr: '',
    durationMs: 1,
    timedOut: false,
    timeoutMs: 5000,
    stdoutDroppedBytes: 0,
    ...overrides,
  };
}

test('JSON on stdout is the signal, whatever the exit code', () => {
  assert.deepEqual(signalDataFor(result({ stdout: '{"deploy_status_code": 0, "out": "v"}\n', stderr: 'log' })), {
    deploy_status_code: 0,
    out: 'v',
  });
  assert.deepEqual(signalDataFor(result({ exitCode: 3, stdout: '{"a": 1}' })), { a: 1 });
});

test('text on stdout, or a failure with no stdout, gives the three deploy_* keys', () => {
  assert.deepEqual(signalDataFor(result({ stdout: 'hello\n', stderr: 'warn\n' })), {
    deploy_stdout: 'hello\n',
    deploy_stderr: 'warn\n',
    deploy_status_code: 0,
  });
  assert.deepEqual(signalDataFor(result({ stdout: '\n' })), { deploy_stdout: '\n', deploy_stderr: '', deploy_status_code: 0 });
  assert.deepEqual(signalDataFor(result({ exitCode: 2, stderr: 'boom' })), {
    deploy_stdout: '',
    deploy_stderr: 'boom',
    deploy_status_code: 2,
  });
  assert.deepEqual(signalDataFor(result({ stdout: '[1, 2]' })), { deploy_stdout: '[1, 2]', deploy_stderr: '', deploy_status_code: 0 });
});

test('empty stdout and exit 0 gives {}', () => {
  assert.deepEqual(signalDataFor(result({ stderr: 'only logs' })), {});
});

test('a hook killed by a signal reports minus the signal number, as Python does', () => {
  assert.equal(returnCode({ exitCode: null, signal: 'SIGKILL' }), -9);
  assert.deepEqual(signalDataFor(result({ exitCode: null, signal: 'SIGTERM' })), {
    deploy_stdout: '',
    deploy_stderr: '',
    deploy_status_code: -15,
  });
});

test('a timeout is a failure that says so, even when stdout held JSON', () => {
  const data = signalDataFor(
    result({ exitCode: null, signal: 'SIGTERM', timedOut: true, timeoutMs: 1500, stdout: '{"a": 1}', stderr: 'partial' }),
  );
  assert.equal(data.deploy_status_code, 124);
  assert.equal(data.deploy_stdout, '{"a": 1}');
  assert.equal(data.deploy_stderr, 'partial\nheat-config: /hooks/script timed out after 1.5 s and was killed with its process tree\n');
});

test('a hook that could not start fails with 126 and the reason', () => {
  const data = signalDataFor(result({ exitCode: null, startError: 'heat-config: could not start /hooks/script: EACCES' }));
  assert.deepEqual(data, {
    deploy_stdout: '',
    deploy_stderr: 'heat-config: could not start /hooks/script: EACCES\n',
    deploy_status_code: 126,
  });
  const interrupted = interruptedSignalData('/hooks/script');
  assert.equal(interrupted.deploy_status_code, 1);
  assert.match(String(interrupted.deploy_stderr), /\/hooks\/script was interrupted/);
});

test('a stdout cut to its end is never a success: the exit code when non-zero, else 1, with a line saying why', () => {
  const cut = { stdout: '[heat-config: the first 9 bytes ...]\n"deploy_status_code": 0}', stdoutDroppedBytes: 9 };
  assert.deepEqual(signalDataFor(result({ ...cut, stderr: 'log' })), {
    deploy_stdout: cut.stdout,
    deploy_stderr: 'log\nheat-config: /hooks/script wrote more on stdout than heat-config keeps, so its result could not be read\n',
    deploy_status_code: 1,
  });
  assert.equal(signalDataFor(result({ ...cut, exitCode: 5 })).deploy_status_code, 5);
});
