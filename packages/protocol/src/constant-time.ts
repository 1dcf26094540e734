/**
 * Compares two secrets in time that depends only on their lengths (a length mismatch fails at once;
 * lengths are not secret). Every UTF-16 code unit is compared, with no branch on what they hold, so
 * how long it takes says nothing of where two strings of one length differ.
 *
 * It compares the strings themselves rather than `crypto.timingSafeEqual` over `Buffer.from` of
 * each: that allocates two buffers per call, which in a side-by-side run on a slow CPU cost an
 * agent's metadata poll ~12 µs of ~95 (test/bench/README.md). Comparing code units is also exact
 * where UTF-8 bytes are not: two different lone surrogates both encode as U+FFFD.
 */
export function secretsEqual(given: string, expected: string): boolean {
  const length = expected.length;
  if (given.length !== length) return false;
  let difference = 0;
  for (let i = 0; i < length; i++) difference |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return difference === 0;
}
