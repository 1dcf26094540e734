import { test } from 'node:test';
import assert from 'node:assert/strict';
import { beforeDeadline, DEADLINE_PASSED } from './deadline.ts';

test('a call gets a signal for the time left; being cut short by it gives DEADLINE_PASSED', async () => {
  const budgets: number[] = [];
  const deps = {
    now: () => 1000,
    signalAfter: (ms: number) => {
      budgets.push(ms);
      return AbortSignal.abort();
    },
  };
  assert.equal(await beforeDeadline(3500, deps, async () => 'answer'), 'answer');
  assert.equal(
    await beforeDeadline(3500, deps, async (signal) => {
      throw signal?.reason;
    }),
    DEADLINE_PASSED,
  );
  assert.deepEqual(budgets, [2500, 2500]);
});

test('a passed deadline makes no call; other failures are rethrown; no deadline, no signal', async () => {
  let calls = 0;
  const deps = { now: () => 5000 };
  assert.equal(
    await beforeDeadline(5000, deps, async () => {
      calls++;
      return 'answer';
    }),
    DEADLINE_PASSED,
  );
  assert.equal(calls, 0);
  const refused = new Error('refused');
  await assert.rejects(
    beforeDeadline(60_000, deps, async () => {
      throw refused;
    }),
    (error: unknown) => error === refused,
  );
  assert.equal(await beforeDeadline(Number.POSITIVE_INFINITY, deps, async (signal) => signal), undefined);
});
