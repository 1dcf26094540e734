// The order `LANG=C sort -n` gives, which dib-run-parts uses for scripts (and, through the full
// paths it sorts, byte order for environment files): the leading number first, then C byte order.

interface LeadingNumber {
  negative: boolean;
  /** Integer digits without leading zeros. */
  whole: string;
  /** Fraction digits without trailing zeros. */
  fraction: string;
}

/** The number GNU sort -n reads at the start of a line (blanks, optional '-', digits, optional '.' digits); none reads as 0. */
function leadingNumber(line: string): LeadingNumber {
  const match = /^[ \t]*(-?)(\d*)(?:\.(\d*))?/.exec(line);
  const whole = (match?.[2] ?? '').replace(/^0+/, '');
  const fraction = (match?.[3] ?? '').replace(/0+$/, '');
  const isZero = whole === '' && fraction === '';
  return { negative: !isZero && match?.[1] === '-', whole, fraction };
}

function compareMagnitude(a: LeadingNumber, b: LeadingNumber): number {
  if (a.whole.length !== b.whole.length) return a.whole.length - b.whole.length;
  if (a.whole !== b.whole) return a.whole < b.whole ? -1 : 1;
  if (a.fraction !== b.fraction) return a.fraction < b.fraction ? -1 : 1;
  return 0;
}

/** C-locale byte order of two strings (UTF-8 bytes, as `LC_ALL=C sort` compares them). */
export function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Compares two lines as `LANG=C sort -n` does: by leading number, then by C byte order of the whole line. */
export function compareNumericThenBytes(a: string, b: string): number {
  const left = leadingNumber(a);
  const right = leadingNumber(b);
  let order: number;
  if (left.negative !== right.negative) order = left.negative ? -1 : 1;
  else order = left.negative ? compareMagnitude(right, left) : compareMagnitude(left, right);
  return order !== 0 ? order : compareBytes(a, b);
}
