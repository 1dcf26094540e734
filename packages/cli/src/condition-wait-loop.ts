import type { HearthClient, HearthClientError } from '@hearth/client';
import type { WaitCondition } from '@hearth/protocol';
import { beforeDeadline, DEADLINE_PASSED } from './deadline.ts';
import { OutageRetry } from './outage.ts';
import { MAX_POLL_SECONDS, MIN_POLL_GAP_MS, outcomeOf, type WaitOutcome } from './wait-loop.ts';

/** Result of waitForCondition: the same fields however it ended. */
export interface ConditionWaitResult {
  outcome: WaitOutcome;
  /** The wait condition as last seen; undefined when our own timeout passed before the server answered at all. */
  waitCondition: WaitCondition | undefined;
  /** Time waited, in ms. */
  elapsedMs: number;
}

/** What waitForCondition needs, injected so it runs under test without a server or real time. */
export interface ConditionWaitDeps {
  client: Pick<HearthClient, 'pollWaitCondition'>;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** A signal that aborts after `ms`, ending a call at our own timeout. Default AbortSignal.timeout. */
  signalAfter?: ((ms: number) => AbortSignal) | undefined;
  /** Called with each new state of the condition seen, and with the current one when the server answers again after an outage. Default: none. */
  onUpdate?: ((waitCondition: WaitCondition) => void) | undefined;
  /** Called when a call failed in an outage the wait rides through, before its pause. Default: none. */
  onRetry?: ((error: HearthClientError) => void) | undefined;
}

/** Which wait condition to wait for, and for how long. */
export interface ConditionWaitTarget {
  stack: string;
  name: string;
  /** Our own limit in seconds; undefined waits until the condition ends (its own timeout fails it). */
  timeoutSeconds?: number | undefined;
}

/**
 * Waits until a wait condition leaves IN_PROGRESS or our own timeout passes, long-polling the
 * server with the last ETag (GET ?wait=N, If-None-Match), so each signal is seen as it lands. Each
 * call gets only the time left: a server that does not answer ends the wait at our own timeout.
 * Once the server has answered, a restart or an outage of up to OUTAGE_LIMIT_MS is ridden through.
 */
export async function waitForCondition(target: ConditionWaitTarget, deps: ConditionWaitDeps): Promise<ConditionWaitResult> {
  const { stack, name, timeoutSeconds } = target;
  const started = deps.now();
  const deadline = timeoutSeconds === undefined ? Number.POSITIVE_INFINITY : started + timeoutSeconds * 1000;
  const ended = (outcome: WaitOutcome, waitCondition: WaitCondition | undefined): ConditionWaitResult => ({
    outcome,
    waitCondition,
    elapsedMs: deps.now() - started,
  });
  const first = await beforeDeadline(deadline, deps, (signal) => deps.client.pollWaitCondition(stack, name, { signal }));
  if (first === DEADLINE_PASSED) return ended('TIMEOUT', undefined);
  if (!first.modified) throw new Error(`the server answered "not modified" to a GET of wait condition ${name} without If-None-Match`);
  let waitCondition = first.waitCondition;
  let etag = first.etag;
  deps.onUpdate?.(waitCondition);
  const outage = new OutageRetry(() => deps.now());
  for (;;) {
    const outcome = outcomeOf(waitCondition.status);
    if (outcome !== undefined) return ended(outcome, waitCondition);
    const remainingMs = deadline - deps.now();
    if (remainingMs <= 0) return ended('TIMEOUT', waitCondition);
    const asked = deps.now();
    // Just after an outage, ask for an answer at once: a long-poll would hide that the server is back.
    const afterOutage = outage.retrying;
    const wait = afterOutage ? 0 : Math.min(MAX_POLL_SECONDS, Math.ceil(remainingMs / 1000));
    // After a first answer, a restart or a brief outage is ridden through (outage.ts), not fatal.
    const poll = await outage.attempt(
      () => beforeDeadline(deadline, deps, (signal) => deps.client.pollWaitCondition(stack, name, { etag, wait, signal })),
      deadline,
      deps,
    );
    if (poll === undefined) continue;
    if (poll === DEADLINE_PASSED) return ended('TIMEOUT', waitCondition);
    etag = poll.etag;
    if (poll.modified) waitCondition = poll.waitCondition;
    // The first answer after an outage is reported even when "not modified": the server is back.
    if (poll.modified || afterOutage) deps.onUpdate?.(waitCondition);
    const tookMs = deps.now() - asked;
    if (waitCondition.status === 'IN_PROGRESS' && tookMs < MIN_POLL_GAP_MS) {
      await deps.sleep(Math.min(MIN_POLL_GAP_MS - tookMs, Math.max(0, deadline - deps.now())));
    }
  }
}
