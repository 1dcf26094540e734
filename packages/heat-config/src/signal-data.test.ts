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

test('a value hearth-server would refuse is sent as its JSON text, and deploy_stderr says so', () => {
  const deep = `${'['.repeat(150)}${']'.repeat(150)}`;
  const signal = signalDataFor(
    result({
      stdout: `{"deploy_status_code": 1e400, "deploy_stderr": "log\\n", "deep": {"a": ${deep}}, "n": [1e400], "ok": [[1]], "constructor": {"prototype": 1}}`,
    }),
  );
  assert.equal(signal.deploy_status_code, 'Infinity', 'a status past JSON range still fails the deployment');
  assert.equal(signal.deep, `{"a":${deep}}`);
  assert.equal(signal.n, '["Infinity"]');
  assert.deepEqual(signal.ok, [[1]]);
  assert.equal(signal.constructor, '{"prototype":1}');
  assert.equal(
    signal.deploy_stderr,
    'log\n' +
      '[heat-config: deploy_status_code was sent as JSON text: it is or holds a number too large for JSON]\n' +
      '[heat-config: deep was sent as JSON text: it is nested deeper than 100 levels]\n' +
      '[heat-config: n was sent as JSON text: it is or holds a number too large for JSON]\n' +
      '[heat-config: constructor was sent as JSON text: it holds a key named constructor with a prototype key]\n',
  );
  // What the server takes: nothing deeper than 100 levels, every number finite.
  assert.doesNotThrow(() => JSON.stringify(signal));
  assert.equal(JSON.stringify(signal).includes('null'), false);
});

test('a __proto__ key is left out; a result nested too deep to write as JSON is still a signal that can be saved', () => {
  const proto = signalDataFor(result({ stdout: '{"__proto__": {"x": 1}, "deploy_stdout": "p", "v": {"__proto__": 2}}' }));
  assert.deepEqual(Object.keys(proto), ['deploy_stdout', 'v', 'deploy_stderr']);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.equal(proto.v, '{"__proto__":2}');
  assert.match(
    proto.deploy_stderr as string,
    /^\[heat-config: __proto__ was left out of the signal: hearth-server refuses that key\]\n\[heat-config: v was sent as JSON text: it holds a key named __proto__\]\n$/,
  );

  const depth = 200_000;
  const signal = signalDataFor(result({ stdout: `{"deploy_status_code": 0, "o": ${'['.repeat(depth)}${']'.repeat(depth)}}` }));
  assert.equal(signal.deploy_status_code, 0);
  assert.equal(signal.o, '[heat-config: the value is nested too deep to write as JSON]');
  assert.match(signal.deploy_stderr as string, /o was sent as JSON text: it is nested deeper than 100 levels/);
  assert.doesNotThrow(() => JSON.stringify(signal));
});

test('a deploy_stdout or deploy_stderr that is not text is sent as its JSON text', () => {
  assert.deepEqual(signalDataFor(result({ stdout: '{"deploy_stdout": ["a", 1], "deploy_stderr": 5, "deploy_status_code": 0}' })), {
    deploy_stdout: '["a",1]',
    deploy_stderr:
      '5\n[heat-config: deploy_stdout was sent as JSON text: it is not text]\n[heat-config: deploy_stderr was sent as JSON text: it is not text]\n',
    deploy_status_code: 0,
  });
  assert.deepEqual(signalDataFor(result({ stdout: '{"deploy_stdout": null, "deploy_stderr": "e"}' })), {
    deploy_stdout: null,
    deploy_stderr: 'e',
  });
});

test('a result hearth-server takes as it is comes through unchanged', () => {
  const stdout = '{"deploy_status_code": 0, "a": {"b": [1, "é", null, {"c": true}]}, "s": "\\u0000\\r\\n", "big": 1e300}';
  assert.deepEqual(signalDataFor(result({ stdout })), JSON.parse(stdout));
});
