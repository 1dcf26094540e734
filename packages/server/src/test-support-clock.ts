// A wall-clock step (NTP, often right after boot) made in-process for tests: `Date` (Date.now and
// `new Date()`) is offset, while timers and performance.now() are not, just as a real step leaves them.

/**
 * Puts in a wall clock that `step` moves by `offsetMs` (negative: back) from then on: `Date.now` taken
 * as a function before the step (a default parameter) moves with it too. `restore` puts `Date` back.
 */
export function steppableWallClock(): { step: (offsetMs: number) => void; restore: () => void } {
  const Real = globalThis.Date;
  let offset = 0;
  class Stepped extends Real {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(Real.now() + offset);
      else super(...(args as [string | number | Date]));
    }
    static override now(): number {
      return Real.now() + offset;
    }
  }
  globalThis.Date = Stepped as DateConstructor;
  return {
    step: (offsetMs) => void (offset += offsetMs),
    restore: () => void (globalThis.Date = Real),
  };
}

/** Steps the wall clock by `offsetMs` now; returns the function that puts it right. */
export function stepWallClock(offsetMs: number): () => void {
  const clock = steppableWallClock();
  clock.step(offsetMs);
  return clock.restore;
}
