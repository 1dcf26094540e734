import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StoredOutput } from '@hearth/protocol';
import { signalOutcome } from './signal-outcome.ts';

const outputs: StoredOutput[] = [
  { name: 'result', type: 'String', error_output: false },
  { name: 'failure', type: 'String', error_output: true },
];

test('an empty signal completes with null deploy_* values (Heat: {} => COMPLETE)', () => {
  const outcome = signalOutcome({}, outputs, null);
  assert.equal(outcome.status, 'COMPLETE');
  assert.equal(outcome.reason, 'Outputs received');
  assert.deepEqual(outcome.outputValues, { deploy_stdout: null, deploy_stderr: null, deploy_status_code: null });
});

test("a non-zero status code fails with Heat's reason", () => {
  for (const code of [1, '2', 255]) {
    const outcome = signalOutcome({ deploy_status_code: code }, outputs, null);
    assert.equal(outcome.status, 'FAILED');
    assert.equal(outcome.reason, `deploy_status_code : Deployment exited with non-zero status code: ${code}`);
  }
});

test('zero in any spelling succeeds', () => {
  for (const code of [0, '0', '', null]) assert.equal(signalOutcome({ deploy_status_code: code }, outputs, null).status, 'COMPLETE');
});

test('declared outputs are kept, undeclared keys dropped, previous values merged', () => {
  const outcome = signalOutcome({ result: 'r1', stray: 'x', deploy_stdout: 'out' }, outputs, { older: 1, result: 'r0' });
  assert.deepEqual(outcome.outputValues, { older: 1, result: 'r1', deploy_stdout: 'out', deploy_stderr: null, deploy_status_code: null });
});

test("an error_output with a value fails; empty or null does not (Heat's documented meaning)", () => {
  const failed = signalOutcome({ failure: 'disk full', deploy_status_code: 3 }, outputs, null);
  assert.equal(failed.status, 'FAILED');
  assert.equal(failed.reason, 'deploy_status_code : Deployment exited with non-zero status code: 3, failure : disk full');
  assert.equal(signalOutcome({ failure: '' }, outputs, null).status, 'COMPLETE');
  assert.equal(signalOutcome({ failure: null }, outputs, null).status, 'COMPLETE');
});
