import { pyJsonDumps } from '@hearth/agent-kit/python-json';

/**
 * JSON as Python's `json.dumps(value, indent=4)` writes it (`sortKeys` adds `sort_keys=True`: code-point order),
 * through agent-kit's pyJsonDumps: ensure_ascii, floats in Python's repr (`1e-05`, `-0.0`), a PyFloat of the
 * parsed deployment as a float (`1.0`, `1e+16`), a PyBigInt with all its digits. Without sortKeys, keys are
 * written in the object's own order (where JavaScript puts integer-like keys first).
 */
export function pythonJson(value: unknown, options: { sortKeys?: boolean } = {}): string {
  return pyJsonDumps(value, { indent: 4, sortKeys: options.sortKeys ?? false });
}
