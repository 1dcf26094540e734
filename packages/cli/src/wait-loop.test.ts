import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SoftwareDeployment } from '@hearth/protocol';
import { outcomeOf, waitForDeployment, type WaitDeps } from './wait-loop.ts';

/** A deployment with just the fields the loop reads. */
function deployment(status: string): SoftwareDeployment {
  return { id: 'd1', status } as SoftwareDeployment;
}

/** A fake server whose long-polls take `holdMs` of fake time each and answer the given statuses in turn. */
function fakeDeps(statuses: string[], holdMs: number): WaitDeps & { waits: number[]; clock: { t: number } } {
  const clock = { t: 0 };
  const waits: number[] = [];
  let next = 0;
  const answer = (): SoftwareDeployment => deployment(statuses[Math.min(next++, statuses.length - 1)] ?? 'IN_PROGRESS');
  return {
    clock,
    waits,
    now: () => clock.t,
    sleep: async (ms) => {
      clock.t += ms;
    },
    client: {
      getDeployment: async () => answer(),
      waitDeployment: async (_id, wait) => {
        waits.push(wait);
        clock.t += Math.min(holdMs, wait * 1000);
        return answer();
      },
    },
  };
}

test('outcomeOf maps statuses', () => {
  assert.equal(outcomeOf('IN_PROGRESS'), undefined);
  assert.equal(outcomeOf('COMPLETE'), 'COMPLETE');
  assert.equal(outcomeOf('FAILED'), 'FAILED');
  assert.equal(outcomeOf('SOMETHING_NEW'), 'FAILED');
});

test('returns COMPLETE once the server reports it, long-polling up to 30 s at a time', async () => {
  const deps = fakeDeps(['IN_PROGRESS', 'IN_PROGRESS', 'COMPLETE'], 30_000);
  const result = await waitForDeployment('d1', 3600, deps);
  assert.equal(result.outcome, 'COMPLETE');
  assert.deepEqual(deps.waits, [30, 30]);
  assert.equal(result.elapsedMs, 60_000);
});

test('returns FAILED at once for a failed deployment', async () => {
  const deps = fakeDeps(['FAILED'], 0);
  const result = await waitForDeployment('d1', 10, deps);
  assert.equal(result.outcome, 'FAILED');
  assert.deepEqual(deps.waits, []);
});

test('returns TIMEOUT when its own deadline passes, asking only for the time left', async () => {
  const deps = fakeDeps(['IN_PROGRESS'], 60_000);
  const result = await waitForDeployment('d1', 45, deps);
  assert.equal(result.outcome, 'TIMEOUT');
  assert.deepEqual(deps.waits, [30, 15]);
  assert.equal(result.elapsedMs, 45_000);
});

test('does not poll tightly when the server answers long-polls at once', async () => {
  const deps = fakeDeps(['IN_PROGRESS'], 0);
  const result = await waitForDeployment('d1', 5, deps);
  assert.equal(result.outcome, 'TIMEOUT');
  assert.ok(deps.waits.length <= 5, `${deps.waits.length} calls in 5 s`);
});
