// Timers of any length. setTimeout holds at most 2^31-1 ms (about 24.8 days); a longer delay fires
// after 1 ms instead (a TimeoutOverflowWarning), which turned a 30-day polling interval into a
// spin and a 30-day `--timeout` into an immediate kill. Agents take such values from operators.
// The deadline is on the monotonic clock: a VM's wall clock jumps when NTP first syncs, and a
// deadline on it slept for the size of a backward jump (years) or fired at once after a forward one.

/** setTimeout's longest delay. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Calls `fn` once after `ms`, however long (chained timers); returns a function that cancels it. */
export function setLongTimeout(fn: () => void, ms: number): () => void {
  const deadline = performance.now() + ms;
  let timer: NodeJS.Timeout | undefined;
  const arm = (): void => {
    const left = deadline - performance.now();
    if (left <= 0) fn();
    else timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
  };
  timer = setTimeout(arm, Math.min(Math.max(ms, 0), MAX_TIMER_MS));
  return () => clearTimeout(timer);
}
