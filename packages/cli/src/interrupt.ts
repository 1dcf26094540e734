import type { CliIo } from './io.ts';

/** What untilInterrupted resolves to when Ctrl-C came first. */
export const INTERRUPTED = Symbol('interrupted');

/**
 * Resolves to what `work` resolves to, or to INTERRUPTED on Ctrl-C (SIGINT) before it settles, so
 * that a wait can close its progress line and exit 130 with a line of its own instead of dying
 * mid-line. What `work` does afterwards is dropped (bin.ts exits at once).
 */
export async function untilInterrupted<T>(io: Pick<CliIo, 'onInterrupt'>, work: Promise<T>): Promise<T | typeof INTERRUPTED> {
  if (io.onInterrupt === undefined) return work;
  let undo: () => void = () => undefined;
  const interrupted = new Promise<typeof INTERRUPTED>((resolve) => {
    undo = io.onInterrupt?.(() => resolve(INTERRUPTED)) ?? undo;
  });
  try {
    const first = await Promise.race([work, interrupted]);
    // A late failure of the dropped work is of no interest any more.
    if (first === INTERRUPTED) void work.catch(() => undefined);
    return first;
  } finally {
    undo();
  }
}
