import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SoftwareDeployment } from '@hearth/protocol';
import { HearthApiError, HearthConnectionError } from '@hearth/client';
import { OUTAGE_LIMIT_MS } from './outage.ts';
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

/** A signalAfter that records each budget and hands out signals the test aborts. */
function recordingSignals(): { budgets: number[]; controllers: AbortController[]; signalAfter: (ms: number) => AbortSignal } {
  const budgets: number[] = [];
  const controllers: AbortController[] = [];
  return {
    budgets,
    controllers,
    signalAfter: (ms) => {
      budgets.push(ms);
      const controller = new AbortController();
      controllers.push(controller);
      return controller.signal;
    },
  };
}

/** A call that never answers: it advances the fake clock to the deadline, then ends when its signal aborts. */
function hangUntilAborted(clock: { t: number }, signals: ReturnType<typeof recordingSignals>, signal: AbortSignal | undefined) {
  return new Promise<never>((_resolve, reject) => {
    assert.ok(signal, 'each call within a wait gets a signal');
    signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
    clock.t += signals.budgets.at(-1) ?? 0;
    signals.controllers.at(-1)?.abort();
  });
}

test('each call gets only the time left; a server that never answers ends the wait at the deadline', async () => {
  const deps = fakeDeps(['IN_PROGRESS'], 10_000);
  const signals = recordingSignals();
  deps.signalAfter = signals.signalAfter;
  const neverAnswered = await waitForDeployment('d1', 3, {
    ...deps,
    client: { ...deps.client, getDeployment: async (_id, options) => hangUntilAborted(deps.clock, signals, options?.signal) },
  });
  assert.deepEqual(neverAnswered, { outcome: 'TIMEOUT', deployment: undefined, elapsedMs: 3000 });
  assert.deepEqual(signals.budgets, [3000]);

  deps.clock.t = 0;
  signals.budgets.length = 0;
  const heldTooLong = await waitForDeployment('d1', 45, {
    ...deps,
    client: {
      getDeployment: async () => deployment('IN_PROGRESS'),
      waitDeployment: async (_id, wait, options) => {
        deps.waits.push(wait);
        if (wait === 30) {
          deps.clock.t += 30_000;
          return deployment('IN_PROGRESS');
        }
        return hangUntilAborted(deps.clock, signals, options?.signal);
      },
    },
  });
  assert.equal(heldTooLong.outcome, 'TIMEOUT');
  assert.equal(heldTooLong.deployment?.status, 'IN_PROGRESS');
  assert.equal(heldTooLong.elapsedMs, 45_000);
  assert.deepEqual(signals.budgets, [45_000, 45_000, 15_000]);
});

test('a failure that is not the deadline is passed on', async () => {
  const deps = fakeDeps(['IN_PROGRESS'], 0);
  const refused = new Error('connection refused');
  await assert.rejects(
    waitForDeployment('d1', 30, {
      ...deps,
      client: {
        ...deps.client,
        getDeployment: async () => {
          throw refused;
        },
      },
    }),
    (error: unknown) => error === refused,
  );
});

const target = { method: 'GET', url: 'http://127.0.0.1:8000/v1/default/software_deployments/d1' };
const refused = () => new HearthConnectionError({ ...target, code: 'ERR_CONNECTION', causeCode: 'ECONNREFUSED', message: 'refused' });

/** A fake server that answers IN_PROGRESS first, then fails its long-polls with `failures` in turn, then answers COMPLETE. */
function outageDeps(failures: Array<() => Error>): WaitDeps & { clock: { t: number }; pauses: number[]; retries: string[] } {
  const clock = { t: 0 };
  const pauses: number[] = [];
  const retries: string[] = [];
  let call = 0;
  return {
    clock,
    pauses,
    retries,
    now: () => clock.t,
    sleep: async (ms) => {
      pauses.push(ms);
      clock.t += ms;
    },
    onRetry: (error) => retries.push(error.code),
    client: {
      getDeployment: async () => deployment('IN_PROGRESS'),
      waitDeployment: async () => {
        clock.t += 10;
        const failure = failures[call++];
        if (failure) throw failure();
        return deployment('COMPLETE');
      },
    },
  };
}

test('after a first answer, a restart of the server is ridden through, pausing 1, 2, 4, then 5 s', async () => {
  const unavailable = () => new HearthApiError({ ...target, status: 503, code: 'ERR_STORE_UNAVAILABLE', message: 'restarting' });
  const deps = outageDeps([refused, refused, unavailable, refused, refused]);
  const result = await waitForDeployment('d1', 3600, deps);
  assert.equal(result.outcome, 'COMPLETE');
  assert.deepEqual(deps.retries, ['ERR_CONNECTION', 'ERR_CONNECTION', 'ERR_STORE_UNAVAILABLE', 'ERR_CONNECTION', 'ERR_CONNECTION']);
  assert.deepEqual(deps.pauses, [1000, 2000, 4000, 5000, 5000]);
});

test('an error that is not an outage, or an outage longer than OUTAGE_LIMIT_MS, still ends the wait', async () => {
  const notFound = () => new HearthApiError({ ...target, status: 404, code: 'ERR_DEPLOYMENT_NOT_FOUND', message: 'gone' });
  await assert.rejects(waitForDeployment('d1', 3600, outageDeps([notFound])), /gone/);
  const endless = outageDeps(Array.from({ length: 1000 }, () => refused));
  await assert.rejects(waitForDeployment('d1', 3600, endless), /refused/);
  assert.ok(endless.clock.t >= OUTAGE_LIMIT_MS && endless.clock.t < OUTAGE_LIMIT_MS + 10_000, `gave up after ${endless.clock.t} ms`);
  // Its own deadline comes first when it is nearer: the wait ends as a timeout, not an error.
  const short = await waitForDeployment('d1', 20, outageDeps(Array.from({ length: 1000 }, () => refused)));
  assert.equal(short.outcome, 'TIMEOUT');
});

test('after an outage the next call asks for an answer at once, so the wait shows the server is back', async () => {
  const clock = { t: 0 };
  const waits: number[] = [];
  const seen: string[] = [];
  // Long-polls: refused twice (a restart), then IN_PROGRESS twice (held 30 s when asked to), then COMPLETE.
  const script: Array<() => SoftwareDeployment> = [
    () => {
      throw refused();
    },
    () => {
      throw refused();
    },
    () => deployment('IN_PROGRESS'),
    () => deployment('IN_PROGRESS'),
    () => deployment('COMPLETE'),
  ];
  const result = await waitForDeployment('d1', 3600, {
    now: () => clock.t,
    sleep: async (ms) => {
      clock.t += ms;
    },
    onUpdate: (d) => seen.push(d.status),
    onRetry: (error) => seen.push(error.code),
    client: {
      getDeployment: async () => deployment('IN_PROGRESS'),
      waitDeployment: async (_id, wait) => {
        waits.push(wait);
        clock.t += wait * 1000;
        const next = script.shift();
        assert.ok(next);
        return next();
      },
    },
  });
  assert.equal(result.outcome, 'COMPLETE');
  assert.deepEqual(waits, [30, 0, 0, 30, 30]);
  assert.deepEqual(seen, ['IN_PROGRESS', 'ERR_CONNECTION', 'ERR_CONNECTION', 'IN_PROGRESS', 'IN_PROGRESS', 'COMPLETE']);
});
