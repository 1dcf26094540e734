// Python's `==` on parsed JSON (python-json.ts): whether a collector's new data differs from what it cached.
import { PyBigInt, PyFloat } from './python-json.ts';

/**
 * A number as Python's `==` sees it (bool, int and float compare by value), or undefined for any other value.
 * Exact: a bigint stays a bigint, so 2^64 equals the float 2^64 but not a nearby one.
 */
function pyNumberValue(value: unknown): number | bigint | undefined {
  if (typeof value === 'number' || typeof value === 'bigint') return value;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof PyFloat) return value.value;
  if (value instanceof PyBigInt) return value.value;
  return undefined;
}

/** Python's `==` on numbers: exact across int and float; NaN equals NaN only when `sameObject` (see jsonEqual). */
function pyNumbersEqual(left: number | bigint, right: number | bigint, sameObject: boolean): boolean {
  if (typeof left === typeof right) return left === right || (sameObject && Number.isNaN(left) && Number.isNaN(right));
  const [int, float] = (typeof left === 'bigint' ? [left, right] : [right, left]) as [bigint, number];
  return Number.isInteger(float) && BigInt(float) === int;
}

/**
 * Python's `==` on parsed JSON: dicts compare without regard to key order, lists item by item, numbers by value
 * (1 == 1.0 == true, a PyFloat or PyBigInt as its number), so a float read back from a file equals the one parsed.
 * A NaN inside a list or dict equals a NaN (json.loads hands out one NaN object and a container's `==` checks
 * identity first); at the top a NaN equals nothing.
 */
export function jsonEqual(left: unknown, right: unknown): boolean {
  return pyEqual(left, right, false);
}

function pyEqual(left: unknown, right: unknown, nested: boolean): boolean {
  const leftNumber = pyNumberValue(left);
  const rightNumber = pyNumberValue(right);
  if (leftNumber !== undefined || rightNumber !== undefined) {
    return leftNumber !== undefined && rightNumber !== undefined && pyNumbersEqual(leftNumber, rightNumber, nested);
  }
  if (left === right) return true;
  if (left === null || right === null || typeof left !== 'object' || typeof right !== 'object') return false;
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  if (Array.isArray(left) && Array.isArray(right)) {
    return left.length === right.length && left.every((item, index) => pyEqual(item, right[index], true));
  }
  const a = left as Record<string, unknown>;
  const b = right as Record<string, unknown>;
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => Object.hasOwn(b, key) && pyEqual(a[key], b[key], true));
}
