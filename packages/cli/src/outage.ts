import { isHearthClientError, type HearthClientError } from '@hearth/client';

/** How long a wait rides through hearth-server being unreachable or restarting, without a break, in ms. */
export const OUTAGE_LIMIT_MS = 5 * 60_000;
/** Longest pause between two tries during an outage, in ms. */
const MAX_PAUSE_MS = 5000;

/** Whether a failed call may succeed if tried again soon: no connection, or a 502/503/504 (a restart, a store failover). */
export function isTransient(error: unknown): error is HearthClientError {
  return isHearthClientError(error) && (error.status === 0 || error.status === 502 || error.status === 503 || error.status === 504);
}

/**
 * One wait's view of an outage of hearth-server: after it has answered once, a wait keeps going
 * through a restart (as `events --follow` does) instead of failing on the first refused
 * connection, pausing 1, 2, 4, then 5 s between tries, for at most OUTAGE_LIMIT_MS in a row.
 */
export class OutageRetry {
  private since: number | undefined;
  private failures = 0;

  constructor(private readonly now: () => number) {}

  /** A call failed: the pause before the next try. Rethrows an error that is not transient, or one that ends a too-long outage. */
  failed(error: unknown): { pauseMs: number; error: HearthClientError } {
    if (!isTransient(error)) throw error;
    this.since ??= this.now();
    if (this.now() - this.since >= OUTAGE_LIMIT_MS) throw error;
    this.failures++;
    return { pauseMs: Math.min(MAX_PAUSE_MS, 1000 * 2 ** (this.failures - 1)), error };
  }

  /**
   * True while an outage is being ridden through (the last call failed). The next call should then
   * ask for an answer at once rather than a long-poll, so that the wait sees, and shows, that
   * hearth-server is back as soon as it is.
   */
  get retrying(): boolean {
    return this.failures > 0;
  }

  /** A call succeeded: the outage, if any, is over. */
  succeeded(): void {
    this.since = undefined;
    this.failures = 0;
  }

  /**
   * Makes one call of a wait: its answer, or undefined when it failed in an outage the wait rides
   * through (after `onRetry` and the pause, cut at `deadline`). Other failures are thrown.
   */
  async attempt<T>(call: () => Promise<T>, deadline: number, deps: OutageDeps): Promise<T | undefined> {
    try {
      const answer = await call();
      this.succeeded();
      return answer;
    } catch (caught) {
      const { pauseMs, error } = this.failed(caught);
      deps.onRetry?.(error);
      await deps.sleep(Math.min(pauseMs, Math.max(0, deadline - this.now())));
      return undefined;
    }
  }
}

/** What OutageRetry.attempt needs of a wait. */
export interface OutageDeps {
  sleep(ms: number): Promise<void>;
  onRetry?: ((error: HearthClientError) => void) | undefined;
}

/** The progress status shown while a wait retries: `hearth-server unreachable (ERR_CONNECTION), retrying`. */
export function retryingStatus(error: HearthClientError): string {
  return `hearth-server unreachable (${error.status === 0 ? error.code : `HTTP ${error.status}`}), retrying`;
}
