import type { ParameterType } from '@hearth/protocol';

/** A value converted as Heat stores it, or why Heat refuses it. */
export type Converted = { value: unknown } | { error: string };

/**
 * Reads a boolean as Heat's boolean properties do (`error_output`, `replace_on_change`): a boolean,
 * or the string `true`/`false` in any case; anything else (`yes`, `1`, 1) is refused.
 */
export function heatBoolean(value: unknown): Converted {
  if (typeof value === 'boolean') return { value };
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return { value: value.toLowerCase() === 'true' };
  return { error: `${JSON.stringify(value)} is not a valid boolean: use true or false` };
}

// Python's int() and float() literals (digits may be grouped by single underscores), without
// inf and nan, which JSON cannot hold.
const DIGITS = String.raw`\d(?:_?\d)*`;
const PYTHON_INT = new RegExp(String.raw`^[+-]?${DIGITS}$`);
const PYTHON_FLOAT = new RegExp(String.raw`^[+-]?(?:${DIGITS}\.(?:${DIGITS})?|\.${DIGITS}|${DIGITS})(?:[eE][+-]?${DIGITS})?$`);

/** Heat's `str_to_num`: numbers (and booleans) as they are, a string through int() then float(). */
function heatNumber(value: unknown): Converted {
  const refused = { error: 'a Number must be a number or a numeric string' };
  if (typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value))) return { value };
  if (typeof value !== 'string') return refused;
  const text = value.trim();
  if (PYTHON_INT.test(text)) {
    const whole = BigInt(text.replaceAll('_', ''));
    // Python keeps any integer exactly; past 2^53 hearth could not, so it refuses rather than round.
    if (whole > BigInt(Number.MAX_SAFE_INTEGER) || whole < -BigInt(Number.MAX_SAFE_INTEGER)) {
      return { error: `${text} is too large a whole number to store exactly; give it as a number` };
    }
    return { value: Number(whole) };
  }
  if (!PYTHON_FLOAT.test(text)) return refused;
  const number = Number(text.replaceAll('_', ''));
  return Number.isFinite(number) ? { value: number } : { error: `${text} is out of range for a Number` };
}

/** Python's `json.dumps` text of a value (`, ` and `: ` separators, non-ASCII escaped), as Heat writes it. */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${pythonJsonDumps(k)}: ${pythonJsonDumps(v)}`)
      .join(', ')}}`;
  }
  const text = JSON.stringify(value);
  // JSON.stringify leaves non-ASCII characters as they are; Python's ensure_ascii escapes each UTF-16 unit.
  return typeof value === 'string' ? text.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : text;
}

/**
 * Converts a typed input's default as Heat stores it (software_config_io.InputConfig: the default
 * is read as a property of the input's type): String takes a string, or a boolean or whole number
 * as its text (`True`, `5`); Number a number, a boolean, or a numeric string as its number;
 * Boolean a boolean or `true`/`false` in any case; CommaDelimitedList a list, or a string split at
 * commas; Json an object or a string as given, a list as its JSON text. Anything else is refused.
 */
export function heatDefault(type: ParameterType, value: unknown): Converted {
  switch (type) {
    case 'String':
      if (typeof value === 'string') return { value };
      if (typeof value === 'boolean') return { value: value ? 'True' : 'False' };
      if (typeof value === 'number' && Number.isInteger(value)) return { value: BigInt(value).toString() };
      return { error: 'a String must be a string, a boolean or a whole number' };
    case 'Number':
      return heatNumber(value);
    case 'Boolean': {
      const converted = heatBoolean(value);
      return 'error' in converted
        ? { error: `a Boolean must be true or false (a boolean or a string), not ${JSON.stringify(value)}` }
        : converted;
    }
    case 'CommaDelimitedList':
      if (Array.isArray(value)) return { value };
      if (typeof value === 'string') return { value: value.split(',') };
      return { error: 'a CommaDelimitedList must be a list or a string of comma-separated items' };
    case 'Json':
      if (Array.isArray(value)) return { value: pythonJsonDumps(value) };
      if (typeof value === 'string' || (value !== null && typeof value === 'object')) return { value };
      return { error: 'a Json value must be an object, a list or a string' };
  }
}
