/** What a wait's call returns instead of an answer when the wait's own deadline cut it short. */
export const DEADLINE_PASSED = Symbol('deadline passed');

/** The hint of a wait that ended at its --timeout before hearth-server answered at all. */
export const NO_REPLY_HINT =
  'it accepted the connection but sent no reply: check its health and logs (and HEARTH_URL or --url), or wait longer with --timeout';

/** The clock and the abort timer a deadline needs (injected in tests). */
export interface DeadlineDeps {
  now(): number;
  /** A signal that aborts after `ms`. Default AbortSignal.timeout. */
  signalAfter?: ((ms: number) => AbortSignal) | undefined;
}

/**
 * Runs one call of a wait, giving it only the time left before `deadline` (epoch ms; Infinity: no
 * limit): the call gets a signal that aborts then, retries included. Resolves to DEADLINE_PASSED
 * when the deadline has passed or cut the call short; any other failure is rethrown.
 */
export async function beforeDeadline<T>(
  deadline: number,
  deps: DeadlineDeps,
  call: (signal: AbortSignal | undefined) => Promise<T>,
): Promise<T | typeof DEADLINE_PASSED> {
  if (deadline === Number.POSITIVE_INFINITY) return call(undefined);
  const remainingMs = Math.ceil(deadline - deps.now());
  if (remainingMs <= 0) return DEADLINE_PASSED;
  const signal = deps.signalAfter ? deps.signalAfter(remainingMs) : AbortSignal.timeout(remainingMs);
  try {
    return await call(signal);
  } catch (error) {
    if (signal.aborted) return DEADLINE_PASSED;
    throw error;
  }
}
