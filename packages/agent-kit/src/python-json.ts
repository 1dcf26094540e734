// JSON as Python's json module reads and writes it, for the agents whose files and output must match the
// originals byte for byte: objects keep their key order (a Map, so "1" or "__proto__" is an ordinary key),
// floats stay floats (1.0 is not 1), integers keep their precision, and pyJsonDumps prints what json.dumps prints.
import { pyFloatRepr } from './python-float.ts';

/** A JSON number written with a fraction or an exponent: Python reads it as a float. */
export class PyFloat {
  constructor(readonly value: number) {}

  /** What JSON.stringify writes for it: the number JSON.parse would have read (so `1.0` is `1`). */
  toJSON(): number {
    return this.value;
  }

  /** As Python's str() writes it (`1.0`, `1e-05`), so a template or String() never shows "[object Object]". */
  toString(): string {
    return pyFloatRepr(this.value);
  }
}

/** An integer beyond 2^53 in plain data (see pyPlainData): exact in pyJsonDumps, and JSON.stringify-safe. */
export class PyBigInt {
  constructor(readonly value: bigint) {}

  /** What JSON.stringify writes for it: the nearest number, as JSON.parse would have read it. */
  toJSON(): number {
    return Number(this.value);
  }

  /** Every digit, as Python's str() writes the int. */
  toString(): string {
    return String(this.value);
  }
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

const LITERALS: ReadonlyArray<readonly [string, PyValue]> = [
  ['null', null],
  ['true', true],
  ['false', false],
  ['NaN', new PyFloat(NaN)],
  ['Infinity', new PyFloat(Infinity)],
  ['-Infinity', new PyFloat(-Infinity)],
];

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
    // Runs of plain characters are sliced whole: a string built a character at a time costs tens of
    // bytes of heap per character (a 60 MB document took 2 GB and 9 s).
    const parts: string[] = [];
    for (;;) {
      // Up to a quote, a backslash or a control character (NaN past the end stops it too).
      let end = at;
      for (let code = text.charCodeAt(end); code >= 0x20 && code !== 0x22 && code !== 0x5c; code = text.charCodeAt(++end));
      if (end > at) {
        parts.push(text.slice(at, end));
        at = end;
      }
      const char = text[at];
      if (char === undefined) return fail('Unterminated string');
      if (char === '"') break;
      if (char !== '\\') return fail('Invalid control character');
      const escape = text[at + 1] ?? '';
      if (escape === 'u') {
        const hex = text.slice(at + 2, at + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) return fail('Invalid \\uXXXX escape');
        parts.push(String.fromCharCode(parseInt(hex, 16)));
        at += 6;
      } else if (escape in ESCAPES) {
        parts.push(ESCAPES[escape]!);
        at += 2;
      } else return fail('Invalid \\escape');
    }
    at++;
    return parts.length === 1 ? parts[0]! : parts.join('');
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
    // `+ 0`: Python's int has no negative zero, so `-0` is 0 (a JS -0 is left to floats).
    const int = Number(match[0]) + 0;
    return Number.isSafeInteger(int) ? int : BigInt(match[0]);
  };
  const result = value();
  skip();
  if (at !== text.length) fail('Extra data');
  return result;
}

/**
 * The parsed value as plain data for code written against JSON.parse: dicts become ordinary objects (every key
 * an own property, `__proto__` included), integers beyond 2^53 PyBigInt; floats stay PyFloat. Both classes
 * JSON.stringify as the number JSON.parse would have given, while pyJsonDumps writes them as Python does.
 */
export function pyPlainData(value: PyValue): unknown {
  if (typeof value === 'bigint') return new PyBigInt(value);
  if (Array.isArray(value)) return value.map(pyPlainData);
  if (isDict(value)) return Object.fromEntries([...value].map(([key, item]) => [key, pyPlainData(item)]));
  return value;
}

/** A deep copy of `value` with PyFloat and PyBigInt as numbers: what JSON.parse would have given for the same text. */
export function jsNumbers(value: unknown): unknown {
  if (value instanceof PyFloat) return value.value;
  if (value instanceof PyBigInt) return Number(value.value);
  if (Array.isArray(value)) return value.map(jsNumbers);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, jsNumbers(item)]));
  }
  return value;
}

/** Options of pyJsonDumps. */
export interface PyJsonDumpsOptions {
  /** `indent=N`: one item per line, N spaces a level, separators `,` and `: `. Default none: one line, `, ` and `: `. */
  indent?: number;
  /** `sort_keys=True`: keys in code-point order at every level. Default false: the dict's or object's own order. */
  sortKeys?: boolean;
  /**
   * `ensure_ascii`: every character outside ' '..'~' as `\uXXXX`. Default true, as Python's. False writes text as
   * is (only `"`, `\` and control characters escaped), for files people and YAML readers read.
   */
  ensureAscii?: boolean;
}

const JSON_ESCAPES: Record<string, string> = { '\\': '\\\\', '"': '\\"', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A JSON string literal as json.dumps() writes it (ensure_ascii: everything outside ' '..'~', DEL included, escaped). */
export function pyJsonString(text: string): string {
  return `"${text.replace(/[\\"]|[^ -~]/g, (char) => JSON_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

/**
 * A JSON string literal as json.dumps(ensure_ascii=False) writes it: `"`, `\` and the C0 controls escaped,
 * everything else as is, but for a lone surrogate, escaped as ensure_ascii would (UTF-8 cannot hold one).
 */
function pyJsonStringAsIs(text: string): string {
  return `"${text.replace(
    // eslint-disable-next-line no-control-regex -- the control characters are what is escaped
    /[\\"\u0000-\u001f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    (char) => JSON_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  )}"`;
}

/**
 * A number as json.dumps writes it: NaN and Infinity as Python spells them; -0 and every fraction as a float
 * (`-0.0`, `1e-05`); other numbers as integers. A float with an integer value reads as one unless it is a PyFloat.
 */
function pyNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  if (Object.is(value, -0) || !Number.isInteger(value)) return pyFloatRepr(value);
  return String(value);
}

/** Orders strings by code point, as Python's `sorted` does (JavaScript's default sort compares UTF-16 units). */
function byCodePoint([a]: [string, unknown], [b]: [string, unknown]): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const l = left.next();
    const r = right.next();
    if (l.done || r.done) return l.done && r.done ? 0 : l.done ? -1 : 1;
    const diff = l.value.codePointAt(0)! - r.value.codePointAt(0)!;
    if (diff !== 0) return diff;
  }
}

/**
 * `json.dumps(value)` with Python's defaults (ensure_ascii, NaN/Infinity allowed), `indent`, `sort_keys` and
 * `ensure_ascii` as options. Takes parsed values (Map, PyFloat, bigint) and plain data alike; as JSON.stringify, undefined is null
 * in a list and leaves its key out of an object.
 */
export function pyJsonDumps(value: unknown, options: PyJsonDumpsOptions = {}): string {
  const { indent, sortKeys = false, ensureAscii = true } = options;
  const string = ensureAscii ? pyJsonString : pyJsonStringAsIs;
  const write = (item: unknown, depth: number): string | undefined => {
    if (item === null) return 'null';
    if (typeof item === 'boolean') return String(item);
    if (typeof item === 'number') return pyNumber(item);
    if (typeof item === 'bigint') return String(item);
    if (typeof item === 'string') return string(item);
    if (item instanceof PyFloat) return Number.isFinite(item.value) ? pyFloatRepr(item.value) : pyNumber(item.value);
    if (item instanceof PyBigInt) return String(item.value);
    if (typeof item !== 'object') return undefined;
    const close = (open: string, parts: string[], end: string): string => {
      if (parts.length === 0) return `${open}${end}`;
      if (indent === undefined) return `${open}${parts.join(', ')}${end}`;
      const inner = `\n${' '.repeat(indent * (depth + 1))}`;
      return `${open}${inner}${parts.join(`,${inner}`)}\n${' '.repeat(indent * depth)}${end}`;
    };
    if (Array.isArray(item))
      return close(
        '[',
        item.map((element: unknown) => write(element, depth + 1) ?? 'null'),
        ']',
      );
    const entries: Array<[string, unknown]> = item instanceof Map ? [...(item as Map<string, unknown>)] : Object.entries(item);
    if (sortKeys) entries.sort(byCodePoint);
    const parts: string[] = [];
    for (const [key, element] of entries) {
      const written = write(element, depth + 1);
      if (written !== undefined) parts.push(`${string(key)}: ${written}`);
    }
    return close('{', parts, '}');
  };
  return write(value, 0) ?? 'null';
}
