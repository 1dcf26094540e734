// JSON text byte-for-byte as Python's json.dumps writes it, so that cache files and printed maps
// are identical to the original's (os-apply-config and site scripts may compare them as bytes).
import { pyFloatRepr } from '@hearth/agent-kit/python-float';

/** Escapes every character outside printable ASCII as `\uXXXX`, as Python's `ensure_ascii=True` does (DEL included). */
function ensureAscii(text: string): string {
  return text.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** One scalar: strings and numbers as JSON writes them; a non-finite number or a small fraction as Python spells it. */
function scalar(value: unknown): string {
  if (typeof value === 'number' && !Number.isFinite(value)) return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
  // Integers (every number from 2^53 up) keep JavaScript's form: see the README's known differences.
  if (typeof value === 'number' && !Number.isInteger(value)) return pyFloatRepr(value);
  if (value === undefined) return 'null';
  return ensureAscii(JSON.stringify(value));
}

/**
 * `json.dumps(value)` (no indent: separators `, ` and `: `) or `json.dumps(value, indent=N)` (separators
 * `,` + newline and `: `). Empty containers print as `[]`/`{}` in both. Key order is the object's own
 * order (JavaScript puts integer-like keys first; see the README's known differences).
 */
export function pythonJsonDumps(value: unknown, indent?: number): string {
  const write = (item: unknown, depth: number): string => {
    if (item === null || typeof item !== 'object') return scalar(item);
    const entries: string[] = Array.isArray(item)
      ? item.map((element) => write(element, depth + 1))
      : Object.entries(item as Record<string, unknown>).map(([key, element]) => `${scalar(key)}: ${write(element, depth + 1)}`);
    const [open, close] = Array.isArray(item) ? ['[', ']'] : ['{', '}'];
    if (entries.length === 0) return `${open}${close}`;
    if (indent === undefined) return `${open}${entries.join(', ')}${close}`;
    const inner = '\n' + ' '.repeat(indent * (depth + 1));
    const outer = '\n' + ' '.repeat(indent * depth);
    return `${open}${inner}${entries.join(`,${inner}`)}${outer}${close}`;
  };
  return write(value, 0);
}

/** Python's `==` on parsed JSON: dicts compare without regard to key order, lists item by item. */
export function jsonEqual(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (left === null || right === null || typeof left !== 'object' || typeof right !== 'object') return false;
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  if (Array.isArray(left) && Array.isArray(right)) {
    return left.length === right.length && left.every((item, index) => jsonEqual(item, right[index]));
  }
  const a = left as Record<string, unknown>;
  const b = right as Record<string, unknown>;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
}
