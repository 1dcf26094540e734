// JSON values as Python's json module sees them: objects keep their key order (a Map, so a key
// like "1" or "__proto__" is an ordinary key), floats stay floats (1.0 is not 1), integers keep
// their precision, and dumps() prints what json.dumps() prints with its defaults.
import { pyFloatRepr } from '@hearth/agent-kit/python-float';

export { pyFloatRepr };

/** A JSON number written with a fraction or an exponent: Python reads it as a float. */
export class PyFloat {
  constructor(readonly value: number) {}
}

/** A parsed JSON value: null, bool, int (number, or bigint beyond 2^53), float, str, list or dict. */
export type PyValue = null | boolean | number | bigint | PyFloat | string | PyValue[] | PyDict;

/** A JSON object, in file order. */
export type PyDict = Map<string, PyValue>;

/** True for a JSON object. */
export function isDict(value: PyValue | undefined): value is PyDict {
  return value instanceof Map;
}

/** Thrown by parsePyJson with the offset of the problem. */
export class PyJsonError extends Error {}

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
const WHITESPACE = /[ \t\n\r]*/y;

/** Parses JSON as Python's json.loads() does (NaN, Infinity and -Infinity accepted; raw control characters refused). */
export function parsePyJson(text: string): PyValue {
  let at = 0;
  const fail = (what: string): never => {
    throw new PyJsonError(`${what} at char ${at}`);
  };
  const skip = (): void => {
    WHITESPACE.lastIndex = at;
    WHITESPACE.test(text);
    at = WHITESPACE.lastIndex;
  };
  const string = (): string => {
    at++;
    let out = '';
    for (;;) {
      const char = text[at];
      if (char === undefined) return fail('Unterminated string');
      if (char === '"') break;
      if (char < ' ') return fail('Invalid control character');
      if (char !== '\\') {
        out += char;
        at++;
        continue;
      }
      const escape = text[at + 1] ?? '';
      if (escape === 'u') {
        const hex = text.slice(at + 2, at + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) return fail('Invalid \\uXXXX escape');
        out += String.fromCharCode(parseInt(hex, 16));
        at += 6;
      } else if (escape in ESCAPES) {
        out += ESCAPES[escape];
        at += 2;
      } else return fail('Invalid \\escape');
    }
    at++;
    return out;
  };
  const value = (): PyValue => {
    skip();
    const char = text[at];
    if (char === '"') return string();
    if (char === '{') {
      at++;
      const dict: PyDict = new Map();
      skip();
      if (text[at] === '}') {
        at++;
        return dict;
      }
      for (;;) {
        skip();
        if (text[at] !== '"') return fail('Expecting property name enclosed in double quotes');
        const key = string();
        skip();
        if (text[at] !== ':') return fail("Expecting ':' delimiter");
        at++;
        dict.set(key, value());
        skip();
        if (text[at] === '}') {
          at++;
          return dict;
        }
        if (text[at] !== ',') return fail("Expecting ',' delimiter");
        at++;
      }
    }
    if (char === '[') {
      at++;
      const list: PyValue[] = [];
      skip();
      if (text[at] === ']') {
        at++;
        return list;
      }
      for (;;) {
        list.push(value());
        skip();
        if (text[at] === ']') {
          at++;
          return list;
        }
        if (text[at] !== ',') return fail("Expecting ',' delimiter");
        at++;
      }
    }
    for (const [word, literal] of LITERALS) {
      if (text.startsWith(word, at)) {
        at += word.length;
        return literal;
      }
    }
    NUMBER.lastIndex = at;
    const match = NUMBER.exec(text);
    if (!match) return fail('Expecting value');
    at = NUMBER.lastIndex;
    if (match[1] !== undefined || match[2] !== undefined) return new PyFloat(Number(match[0]));
    const int = Number(match[0]);
    return Number.isSafeInteger(int) ? int : BigInt(match[0]);
  };
  const result = value();
  skip();
  if (at !== text.length) fail('Extra data');
  return result;
}

const LITERALS: ReadonlyArray<readonly [string, PyValue]> = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['NaN', new PyFloat(NaN)],
  ['Infinity', new PyFloat(Infinity)],
  ['-Infinity', new PyFloat(-Infinity)],
];

function floatJson(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  return pyFloatRepr(value);
}

const JSON_ESCAPES: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A JSON string literal as json.dumps() writes it (ensure_ascii: everything outside ' '..'~' escaped). */
export function pyJsonString(text: string): string {
  return `"${text.replace(/[\\"]|[^ -~]/g, (char) => JSON_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

/** json.dumps(value) with Python's defaults: `, ` and `: ` separators, ASCII only, NaN/Infinity allowed. */
export function pyJsonDumps(value: PyValue): string {
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (value instanceof PyFloat) return floatJson(value.value);
  if (typeof value === 'string') return pyJsonString(value);
  if (Array.isArray(value)) return `[${value.map(pyJsonDumps).join(', ')}]`;
  return `{${[...value].map(([key, item]) => `${pyJsonString(key)}: ${pyJsonDumps(item)}`).join(', ')}}`;
}

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
