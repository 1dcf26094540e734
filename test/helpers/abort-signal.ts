// What Node keeps on an AbortSignal, for tests that check a long-lived signal does not grow.

/** How many signals derived from `signal` it still tracks (Node's internal set, made on first use; undefined before). */
export function dependantsOf(signal: AbortSignal): number | undefined {
  const key = Object.getOwnPropertySymbols(signal).find((symbol) => symbol.description === 'kDependantSignals');
  return key === undefined ? undefined : ((signal as unknown as Record<symbol, Set<unknown> | undefined>)[key]?.size ?? 0);
}
