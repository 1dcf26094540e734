import type { HearthClient, HearthClientError } from '@hearth/client';
import type { SoftwareDeployment } from '@hearth/protocol';
import { beforeDeadline, DEADLINE_PASSED } from './deadline.ts';
import { OutageRetry } from './outage.ts';

/** How a wait ended: the deployment's final status, or our own deadline. */
export type WaitOutcome = 'COMPLETE' | 'FAILED' | 'TIMEOUT';

/** Result of waitForDeployment: the same fields however it ended. */
export interface WaitResult {
  outcome: WaitOutcome;
  /** The deployment as last seen; undefined when the deadline passed before the server answered at all. */
  deployment: SoftwareDeployment | undefined;
  /** Time waited, in ms. */
  elapsedMs: number;
}

/** What waitForDeployment needs, injected so it runs under test without a server or real time. */
export interface WaitDeps {
  client: Pick<HearthClient, 'getDeployment' | 'waitDeployment'>;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** A signal that aborts after `ms`, ending a call at the wait's deadline. Default AbortSignal.timeout. */
  signalAfter?: ((ms: number) => AbortSignal) | undefined;
  /** Called with each state of the deployment seen. Default: none. */
  onUpdate?: ((deployment: SoftwareDeployment) => void) | undefined;
  /** Called when a call failed in an outage the wait rides through, before its pause. Default: none. */
  onRetry?: ((error: HearthClientError) => void) | undefined;
}

/** Longest long-poll asked of the server per call, in seconds (the server allows up to 60). */
export const MAX_POLL_SECONDS = 30;
/** Least time between two calls when the server answers a long-poll early with no change, in ms. */
export const MIN_POLL_GAP_MS = 1000;

/** The outcome a deployment status stands for, or undefined while it is IN_PROGRESS. */
export function outcomeOf(status: string): WaitOutcome | undefined {
  if (status === 'IN_PROGRESS') return undefined;
  return status === 'COMPLETE' ? 'COMPLETE' : 'FAILED';
}

/**
 * Waits until a deployment leaves IN_PROGRESS or `timeoutSeconds` pass, long-polling the server
 * (GET ?wait=N) instead of polling tightly. Each call gets only the time left: a server that does
 * not answer ends the wait at its deadline, not a client timeout later. Once the server has
 * answered, a restart or an outage of up to OUTAGE_LIMIT_MS is ridden through (onRetry).
 */
export async function waitForDeployment(id: string, timeoutSeconds: number, deps: WaitDeps): Promise<WaitResult> {
  const started = deps.now();
  const deadline = started + timeoutSeconds * 1000;
  const ended = (outcome: WaitOutcome, deployment: SoftwareDeployment | undefined): WaitResult => ({
    outcome,
    deployment,
    elapsedMs: deps.now() - started,
  });
  const first = await beforeDeadline(deadline, deps, (signal) => deps.client.getDeployment(id, { signal }));
  if (first === DEADLINE_PASSED) return ended('TIMEOUT', undefined);
  let deployment = first;
  deps.onUpdate?.(deployment);
  const outage = new OutageRetry(() => deps.now());
  for (;;) {
    const outcome = outcomeOf(deployment.status);
    if (outcome !== undefined) return ended(outcome, deployment);
    const remainingMs = deadline - deps.now();
    if (remainingMs <= 0) return ended('TIMEOUT', deployment);
    const asked = deps.now();
    // Just after an outage, ask for an answer at once: a long-poll would hide that the server is back.
    const afterOutage = outage.retrying;
    const wait = afterOutage ? 0 : Math.min(MAX_POLL_SECONDS, Math.ceil(remainingMs / 1000));
    // After a first answer, a restart or a brief outage is ridden through (outage.ts), not fatal.
    const next = await outage.attempt(
      () => beforeDeadline(deadline, deps, (signal) => deps.client.waitDeployment(id, wait, { signal })),
      deadline,
      deps,
    );
    if (next === undefined) continue;
    if (next === DEADLINE_PASSED) return ended('TIMEOUT', deployment);
    deployment = next;
    deps.onUpdate?.(deployment);
    const tookMs = deps.now() - asked;
    if (deployment.status === 'IN_PROGRESS' && tookMs < MIN_POLL_GAP_MS) {
      await deps.sleep(Math.min(MIN_POLL_GAP_MS - tookMs, Math.max(0, deadline - deps.now())));
    }
  }
}
