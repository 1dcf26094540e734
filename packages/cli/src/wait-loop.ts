import type { HearthClient } from '@hearth/client';
import type { SoftwareDeployment } from '@hearth/protocol';

/** How a wait ended: the deployment's final status, or our own deadline. */
export type WaitOutcome = 'COMPLETE' | 'FAILED' | 'TIMEOUT';

/** Result of waitForDeployment: the same fields however it ended. */
export interface WaitResult {
  outcome: WaitOutcome;
  /** The deployment as last seen. */
  deployment: SoftwareDeployment;
  /** Time waited, in ms. */
  elapsedMs: number;
}

/** What waitForDeployment needs, injected so it runs under test without a server or real time. */
export interface WaitDeps {
  client: Pick<HearthClient, 'getDeployment' | 'waitDeployment'>;
  now(): number;
  sleep(ms: number): Promise<void>;
  /** Called with each state of the deployment seen. Default: none. */
  onUpdate?: ((deployment: SoftwareDeployment) => void) | undefined;
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
 * (GET ?wait=N) instead of polling tightly.
 */
export async function waitForDeployment(id: string, timeoutSeconds: number, deps: WaitDeps): Promise<WaitResult> {
  const started = deps.now();
  const deadline = started + timeoutSeconds * 1000;
  let deployment = await deps.client.getDeployment(id);
  deps.onUpdate?.(deployment);
  for (;;) {
    const outcome = outcomeOf(deployment.status);
    if (outcome !== undefined) return { outcome, deployment, elapsedMs: deps.now() - started };
    const remainingMs = deadline - deps.now();
    if (remainingMs <= 0) return { outcome: 'TIMEOUT', deployment, elapsedMs: deps.now() - started };
    const asked = deps.now();
    deployment = await deps.client.waitDeployment(id, Math.min(MAX_POLL_SECONDS, Math.ceil(remainingMs / 1000)));
    deps.onUpdate?.(deployment);
    const tookMs = deps.now() - asked;
    if (deployment.status === 'IN_PROGRESS' && tookMs < MIN_POLL_GAP_MS) {
      await deps.sleep(Math.min(MIN_POLL_GAP_MS - tookMs, Math.max(0, deadline - deps.now())));
    }
  }
}
