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

/** `value` with every object's keys sorted by code point, recursively (Python's `sort_keys=True`). */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort(byCodePoint)
      .map((key) => [key, sortKeys(value[key])]),
  );
}

/**
 * JSON as Python's `json.dumps(value, indent=4)` writes it (`sortKeys` adds `sort_keys=True`): `": "` after
 * keys and `ensure_ascii`, so everything outside printable ASCII (DEL and non-ASCII, astral characters as two
 * escaped surrogates) is escaped as \uXXXX. Numbers are written as JavaScript writes them: a float that arrived
 * as `1.0` is written `1`.
 */
export function pythonJson(value: unknown, options: { sortKeys?: boolean } = {}): string {
  const text = JSON.stringify(options.sortKeys ? sortKeys(value) : value, null, 4) ?? 'null';
  return text.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
