import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthConnectionError, type WaitConditionPoll, type WaitConditionPollRequest } from '@hearth/client';
import type { WaitCondition } from '@hearth/protocol';
import { waitForCondition, type ConditionWaitDeps } from './condition-wait-loop.ts';

/** A wait condition with just the fields the loop reads. */
function condition(status: string, received: number): WaitCondition {
  return { name: 'ready', status, received, count: 3 } as WaitCondition;
}

/**
 * A fake server: `states` are the condition's successive states; a long-poll with the current ETag
 * takes `holdMs` of fake time and then answers the next state if `changeEvery` polls have passed,
 * else 304.
 */
function fakeDeps(
  states: WaitCondition[],
  holdMs: number,
): ConditionWaitDeps & { requests: WaitConditionPollRequest[]; clock: { t: number }; updates: number[] } {
  const clock = { t: 0 };
  const requests: WaitConditionPollRequest[] = [];
  const updates: number[] = [];
  let version = 0;
  const answer = (): WaitConditionPoll => {
    const state = states[Math.min(version, states.length - 1)];
    assert.ok(state);
    return { modified: true, etag: `"v${version}"`, waitCondition: state };
  };
  return {
    clock,
    requests,
    updates,
    now: () => clock.t,
    sleep: async (ms) => {
      clock.t += ms;
    },
    onUpdate: (wc) => updates.push(wc.received),
    client: {
      pollWaitCondition: async (_stack, _name, request = {}) => {
        requests.push(request);
        if (request.etag === undefined) return answer();
        clock.t += Math.min(holdMs, (request.wait ?? 0) * 1000);
        if (version < states.length - 1) {
          version++;
          return answer();
        }
        return { modified: false, etag: request.etag };
      },
    },
  };
}

test('follows each signal by ETag until COMPLETE', async () => {
  const deps = fakeDeps(
    [condition('IN_PROGRESS', 0), condition('IN_PROGRESS', 1), condition('IN_PROGRESS', 2), condition('COMPLETE', 3)],
    5000,
  );
  const result = await waitForCondition({ stack: 'web', name: 'ready' }, deps);
  assert.equal(result.outcome, 'COMPLETE');
  assert.deepEqual(deps.updates, [0, 1, 2, 3]);
  assert.deepEqual(
    deps.requests.map((r) => r.etag),
    [undefined, '"v0"', '"v1"', '"v2"'],
  );
  assert.deepEqual(
    deps.requests.slice(1).map((r) => r.wait),
    [30, 30, 30],
  );
  assert.equal(result.elapsedMs, 15_000);
});

test('returns FAILED at once for a failed condition', async () => {
  const deps = fakeDeps([condition('FAILED', 1)], 0);
  const result = await waitForCondition({ stack: 'web', name: 'ready', timeoutSeconds: 10 }, deps);
  assert.equal(result.outcome, 'FAILED');
  assert.equal(deps.requests.length, 1);
});

test('returns TIMEOUT when its own timeout passes, asking only for the time left; 304s keep the ETag', async () => {
  const deps = fakeDeps([condition('IN_PROGRESS', 1)], 60_000);
  const result = await waitForCondition({ stack: 'web', name: 'ready', timeoutSeconds: 45 }, deps);
  assert.equal(result.outcome, 'TIMEOUT');
  assert.equal(result.waitCondition?.received, 1);
  assert.deepEqual(
    deps.requests.map((r) => [r.etag, r.wait]),
    [
      [undefined, undefined],
      ['"v0"', 30],
      ['"v0"', 15],
    ],
  );
  assert.equal(result.elapsedMs, 45_000);
  assert.deepEqual(deps.updates, [1]);
});

test('without a timeout it waits until the condition ends', async () => {
  const deps = fakeDeps([condition('IN_PROGRESS', 0), condition('FAILED', 0)], 3_600_000);
  const result = await waitForCondition({ stack: 'web', name: 'ready' }, deps);
  assert.equal(result.outcome, 'FAILED');
  assert.deepEqual(deps.requests.at(-1)?.wait, 30);
});

test('does not poll tightly when the server answers long-polls at once', async () => {
  const deps = fakeDeps([condition('IN_PROGRESS', 0)], 0);
  const result = await waitForCondition({ stack: 'web', name: 'ready', timeoutSeconds: 5 }, deps);
  assert.equal(result.outcome, 'TIMEOUT');
  assert.ok(deps.requests.length <= 6, `${deps.requests.length} calls in 5 s`);
});

test('each poll gets only the time left; a server that never answers ends the wait at our own timeout', async () => {
  const deps = fakeDeps([condition('IN_PROGRESS', 0)], 0);
  const budgets: number[] = [];
  deps.signalAfter = (ms) => {
    budgets.push(ms);
    return AbortSignal.abort();
  };
  const result = await waitForCondition(
    { stack: 'web', name: 'ready', timeoutSeconds: 3 },
    {
      ...deps,
      client: {
        pollWaitCondition: async (_stack, _name, request = {}) => {
          deps.clock.t += 3000;
          throw request.signal?.aborted === true ? request.signal.reason : new Error('no signal given');
        },
      },
    },
  );
  assert.deepEqual(result, { outcome: 'TIMEOUT', waitCondition: undefined, elapsedMs: 3000 });
  assert.deepEqual(budgets, [3000]);
});

test('without a timeout no poll is cut short', async () => {
  const deps = fakeDeps([condition('IN_PROGRESS', 0), condition('COMPLETE', 1)], 1000);
  const signals: Array<AbortSignal | undefined> = [];
  const poll = deps.client.pollWaitCondition;
  const result = await waitForCondition(
    { stack: 'web', name: 'ready' },
    {
      ...deps,
      client: {
        pollWaitCondition: (stack, name, request) => {
          signals.push(request?.signal);
          return poll(stack, name, request);
        },
      },
    },
  );
  assert.equal(result.outcome, 'COMPLETE');
  assert.deepEqual(signals, [undefined, undefined]);
});

test('after an outage the next poll answers at once, and a "not modified" answer still reports the server is back', async () => {
  const deps = fakeDeps([condition('IN_PROGRESS', 1), condition('COMPLETE', 3)], 30_000);
  const poll = deps.client.pollWaitCondition;
  const events: string[] = [];
  let failures = 2;
  let backWithNothingNew = true;
  const result = await waitForCondition(
    { stack: 'web', name: 'ready', timeoutSeconds: 600 },
    {
      ...deps,
      onUpdate: (wc) => events.push(`update ${wc.received}`),
      onRetry: (error) => events.push(error.code),
      client: {
        pollWaitCondition: async (stack, name, request = {}) => {
          if (request.etag !== undefined && failures > 0) {
            failures--;
            throw new HearthConnectionError({
              method: 'GET',
              url: 'u',
              code: 'ERR_CONNECTION',
              causeCode: 'ECONNREFUSED',
              message: 'refused',
            });
          }
          // The server is back with nothing new at first: 304 to the first poll, then COMPLETE.
          if (request.etag !== undefined && backWithNothingNew) {
            backWithNothingNew = false;
            deps.requests.push(request);
            return { modified: false, etag: request.etag };
          }
          return poll(stack, name, request);
        },
      },
    },
  );
  assert.equal(result.outcome, 'COMPLETE');
  assert.deepEqual(
    deps.requests.map((r) => r.wait),
    [undefined, 0, 30],
  );
  assert.deepEqual(events, ['update 1', 'ERR_CONNECTION', 'ERR_CONNECTION', 'update 1', 'update 3']);
});
