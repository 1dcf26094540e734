import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffCeilingMs, backoffDelayMs, DEFAULT_BACKOFF, isRetryableStatus } from './backoff.ts';

test('the ceiling doubles from 1 s and stops at 5 min', () => {
  assert.deepEqual(
    [1, 2, 3, 4, 8, 9, 10, 50, 5000].map((n) => backoffCeilingMs(n)),
    [1000, 2000, 4000, 8000, 128_000, 256_000, 300_000, 300_000, 300_000],
  );
  assert.equal(DEFAULT_BACKOFF.capMs, 300_000);
});

test('full jitter: the delay spans [0, ceiling] and never passes the cap', () => {
  assert.equal(
    backoffDelayMs(3, DEFAULT_BACKOFF, () => 0),
    0,
  );
  assert.equal(
    backoffDelayMs(3, DEFAULT_BACKOFF, () => 0.5),
    2000,
  );
  assert.equal(
    backoffDelayMs(3, DEFAULT_BACKOFF, () => 0.999999),
    3999,
  );
  for (let attempts = 1; attempts < 30; attempts += 1) {
    for (let i = 0; i < 50; i += 1) {
      const delay = backoffDelayMs(attempts);
      assert.ok(delay >= 0 && delay <= backoffCeilingMs(attempts) && delay <= 300_000, `${attempts}: ${delay}`);
    }
  }
  const samples = Array.from({ length: 200 }, () => backoffDelayMs(10));
  assert.ok(new Set(samples).size > 100, 'jittered, not fixed');
});

test('Retry-After raises the delay, still capped', () => {
  assert.equal(
    backoffDelayMs(1, DEFAULT_BACKOFF, () => 0, 5000),
    5000,
  );
  assert.equal(
    backoffDelayMs(1, DEFAULT_BACKOFF, () => 0, 3_600_000),
    300_000,
  );
});

test('408, 429 and 5xx are retried; other 4xx are not', () => {
  assert.deepEqual(
    [400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504].filter(isRetryableStatus),
    [408, 429, 500, 502, 503, 504],
  );
});
