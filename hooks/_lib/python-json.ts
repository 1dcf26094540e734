import { pyFloatRepr } from '@hearth/agent-kit/python-float';
import { isObject } from './deployment.ts';

/** Orders strings by code point, as Python's `sorted` does (JavaScript's default sort compares UTF-16 units). */
function byCodePoint(a: string, b: string): number {
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

/** A string as Python's `ensure_ascii` writes it: everything outside printable ASCII (DEL included) as \uXXXX. */
function pythonString(text: string): string {
  return JSON.stringify(text).replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A number as Python writes the value it parsed from the same JSON: integers as integers, -0 (only a float
 * parses to it) and every fraction in Python's float repr (`1e-05`, `1.5e-07`), non-finite as Python's `NaN`
 * and `Infinity`. JSON.parse keeps no trace of a float's form, so a float with an integer value (`1.0`, `1e16`)
 * is written as an integer (`1`, `10000000000000000`), as Python writes the integer of that value.
 */
function pythonNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  if (Object.is(value, -0) || !Number.isInteger(value)) return pyFloatRepr(value);
  return JSON.stringify(value);
}

/**
 * JSON as Python's `json.dumps(value, indent=4)` writes it (`sortKeys` adds `sort_keys=True`): `": "` after
 * keys, `ensure_ascii` (everything outside printable ASCII, DEL and non-ASCII, astral characters as two escaped
 * surrogates, is escaped as \uXXXX), numbers as `pythonNumber` says. Keys are written in code-point order
 * with `sortKeys`, else in the object's own order (where JavaScript puts integer-like keys first).
 */
export function pythonJson(value: unknown, options: { sortKeys?: boolean } = {}): string {
  const write = (item: unknown, depth: number): string | undefined => {
    if (item === null) return 'null';
    if (typeof item === 'number') return pythonNumber(item);
    if (typeof item === 'string') return pythonString(item);
    if (typeof item === 'boolean') return String(item);
    const inner = `\n${' '.repeat(4 * (depth + 1))}`;
    const outer = `\n${' '.repeat(4 * depth)}`;
    const close = (open: string, parts: string[], end: string): string =>
      parts.length === 0 ? `${open}${end}` : `${open}${inner}${parts.join(`,${inner}`)}${outer}${end}`;
    // As JSON.stringify: undefined (or a function) is null in a list and leaves its key out of an object.
    if (Array.isArray(item)) {
      const parts = item.map((element) => write(element, depth + 1) ?? 'null');
      return close('[', parts, ']');
    }
    if (!isObject(item)) return undefined;
    // Sorted as entries: an object rebuilt from sorted keys would put integer-like keys first again.
    const keys = options.sortKeys ? Object.keys(item).sort(byCodePoint) : Object.keys(item);
    const parts: string[] = [];
    for (const key of keys) {
      const written = write(item[key], depth + 1);
      if (written !== undefined) parts.push(`${pythonString(key)}: ${written}`);
    }
    return close('{', parts, '}');
  };
  return write(value, 0) ?? 'null';
}
