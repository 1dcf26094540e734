// When to try a queued signal again: full-jitter exponential backoff (AWS architecture blog,
// "Exponential Backoff And Jitter"): after the n-th failed attempt wait a uniformly random time
// in [0, min(cap, base * 2^(n-1))], so many VMs coming back at once do not retry in lockstep.

/** Backoff settings. */
export interface BackoffPolicy {
  /** Ceiling of the first wait, in ms. Default 1000. */
  baseMs: number;
  /** Ceiling of any wait, in ms. Default 300000 (5 min). */
  capMs: number;
}

/** The defaults: 1 s doubling up to 5 min. */
export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = Object.freeze({ baseMs: 1000, capMs: 5 * 60 * 1000 });

/** The largest wait after `attempts` failed attempts (>= 1): min(cap, base * 2^(attempts-1)). */
export function backoffCeilingMs(attempts: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const exponent = Math.min(Math.max(attempts, 1) - 1, 52);
  return Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
}

/**
 * The wait before the next attempt after `attempts` failed ones: random in [0, ceiling]; a
 * server's Retry-After (429/503) raises it to at least that, still capped.
 */
export function backoffDelayMs(
  attempts: number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
  random: () => number = Math.random,
  retryAfterMs?: number,
): number {
  const jittered = Math.floor(random() * backoffCeilingMs(attempts, policy));
  return Math.min(policy.capMs, Math.max(jittered, retryAfterMs ?? 0));
}

/** HTTP statuses worth retrying: 408, 429 and every 5xx. Any other 4xx cannot succeed by sending it again. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}
