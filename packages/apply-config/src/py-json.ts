// Python's str(), repr() and truthiness of values parsed by agent-kit's parsePyJson (which keeps dicts in
// order, floats as PyFloat and big integers as bigint), for the messages and templates of the original.
import { pyFloatRepr } from '@hearth/agent-kit/python-float';
import { isDict, PyFloat, type PyValue } from '@hearth/agent-kit/python-json';

function pyStringRepr(text: string): string {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  // eslint-disable-next-line no-control-regex
  const escaped = text.replace(/[\\\n\r\t]|[\x00-\x1f\x7f]/g, (char) =>
    char === '\\'
      ? '\\\\'
      : char === '\n'
        ? '\\n'
        : char === '\r'
          ? '\\r'
          : char === '\t'
            ? '\\t'
            : `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`,
  );
  return quote + (quote === "'" ? escaped.replaceAll("'", "\\'") : escaped) + quote;
}

/** Python's repr() of a parsed value (used in messages, as the original's). */
export function pyRepr(value: PyValue): string {
  if (typeof value === 'string') return pyStringRepr(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(', ')}]`;
  if (isDict(value)) return `{${[...value].map(([key, item]) => `${pyStringRepr(key)}: ${pyRepr(item)}`).join(', ')}}`;
  return pyStr(value);
}

/** Python's str() of a parsed value: strings as they are, True/False/None, float repr, containers as repr. */
export function pyStr(value: PyValue): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  return pyRepr(value);
}

/** Python's truthiness: None, False, 0, 0.0, '', [] and {} are false (NaN is true). */
export function pyTruthy(value: PyValue): boolean {
  if (value === null || value === false || value === '' || value === 0 || value === 0n) return false;
  if (value instanceof PyFloat) return value.value !== 0;
  if (Array.isArray(value)) return value.length > 0;
  if (isDict(value)) return value.size > 0;
  return true;
}
