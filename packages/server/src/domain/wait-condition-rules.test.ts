import { test } from 'node:test';
import assert from 'node:assert/strict';
import { allowedFailures, decide, timeoutReason } from './wait-condition-rules.ts';

const heat = { count: 3, max_failures: null, min_success_percent: null };
const ok = (reason = 'ok') => ({ status: 'SUCCESS', reason });
const bad = (reason = 'bad') => ({ status: 'FAILURE', reason });

test("Heat's rule: waits for count SUCCESS signals; one FAILURE fails at once", () => {
  assert.equal(decide(heat, []), null);
  assert.equal(decide(heat, [ok(), ok()]), null);
  assert.deepEqual(decide(heat, [ok(), ok(), ok()]), { status: 'COMPLETE', reason: '3 of 3 received' });
  assert.deepEqual(decide(heat, [ok(), bad('disk full')]), { status: 'FAILED', reason: 'WaitConditionFailure: disk full' });
});

test('max_failures tolerates that many FAILUREs, then fails', () => {
  const policy = { ...heat, max_failures: 1 };
  assert.equal(decide(policy, [bad()]), null);
  assert.equal(decide(policy, [bad(), ok(), ok()])?.status, 'COMPLETE');
  assert.deepEqual(decide(policy, [bad('a'), bad('b')]), { status: 'FAILED', reason: 'WaitConditionFailure: a;b' });
});

test('min_success_percent: fails early once the share can no longer be met, else decides at count', () => {
  const policy = { count: 4, max_failures: null, min_success_percent: 75 };
  assert.equal(allowedFailures(policy), 1);
  assert.equal(decide(policy, [bad()]), null);
  assert.equal(decide(policy, [bad(), ok(), ok(), ok()])?.status, 'COMPLETE');
  assert.equal(decide(policy, [bad(), bad()])?.status, 'FAILED');
  // With more failures allowed explicitly, the percentage still decides at the end.
  const loose = { count: 2, max_failures: 5, min_success_percent: 100 };
  assert.match(decide(loose, [ok(), bad()])?.reason ?? '', /1 of 2 signals succeeded, below 100%/);
});

test("timeout reason lists what arrived, as Heat's does", () => {
  assert.equal(timeoutReason(heat, []), 'WaitConditionTimeout: 0 of 3 received');
  assert.equal(timeoutReason(heat, [ok('vm1 up'), ok('vm2 up')]), 'WaitConditionTimeout: 2 of 3 received - vm1 up;vm2 up');
});
