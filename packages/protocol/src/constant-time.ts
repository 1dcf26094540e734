import { timingSafeEqual } from 'node:crypto';

/** Compares two secrets in constant time for equal lengths (a length mismatch fails at once). */
export function secretsEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
