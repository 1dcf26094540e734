// What a metric sample's fields may hold: its value's range, its time, and printable text. Shared by
// the JSON route, PutMetricData's form and the evaluator.
import { parseIsoTimestamp } from '@hearth/protocol/signing';

/**
 * The largest magnitude of a sample's value: CloudWatch refuses values outside -2^360 to 2^360 (and
 * NaN and the infinities). Within it, a sum of every sample kept (200 000 of them) stays finite, so
 * no statistic overflows to Infinity (two samples of 1.79e308 did).
 */
export const MAX_METRIC_VALUE = 2 ** 360;

/** True when a value is finite and within ±2^360. */
export function isMetricValueInRange(value: number): boolean {
  return Number.isFinite(value) && Math.abs(value) <= MAX_METRIC_VALUE;
}

/** Why a sample's value is refused (`field` names it, `written` is the value as sent), or null. */
export function metricValueProblem(field: string, value: number, written = String(value)): string | null {
  if (isMetricValueInRange(value)) return null;
  return `${field} ${written} is outside the range CloudWatch takes, -2^360 to 2^360 (about ±2.35e108)`;
}

/**
 * A sample's timestamp in epoch ms, or null when it is no ISO 8601 date and time: without an offset it
 * is UTC, as CloudWatch reads it (boto sends Python's naive `utcnow().isoformat()`; Date.parse would read
 * it in the server's time zone), and a day that does not exist is refused (Date.parse rolls 30 February
 * over to 2 March). The same reading as an EC2 signature's Timestamp.
 */
export const parseSampleTime = parseIsoTimestamp;

/** C0 and C1 control characters and DEL: never part of a name, unit or dimension (they break logs, terminals and XML replies). */
function isControlCharacter(codePoint: number): boolean {
  return codePoint < 0x20 || (codePoint >= 0x7f && codePoint <= 0x9f);
}

/** Why a text field of a sample is refused (`field` names it as the caller sent it), or null: it holds a control character. */
export function metricTextProblem(field: string, text: string): string | null {
  for (const character of text) {
    const codePoint = character.codePointAt(0)!;
    if (isControlCharacter(codePoint)) {
      const code = codePoint.toString(16).toUpperCase().padStart(4, '0');
      return `${field} ${JSON.stringify(text)} contains the control character U+${code}; send printable text`;
    }
  }
  return null;
}
