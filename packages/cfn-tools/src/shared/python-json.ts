// JSON written as Python's json.dumps writes it (the originals print and send it so): `", "` and
// `": "` separators, non-ASCII escaped as \uXXXX. Limits: a float that JavaScript reads as an
// integer (`1.0`) prints as `1`, and integer-like keys come first (JavaScript object order).

/** A string as json.dumps writes it with ensure_ascii (the default). */
export function pythonJsonString(text: string): string {
  return JSON.stringify(text).replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** `json.dumps(value)`: one line, Python's separators. Undefined values in objects are left out. */
export function pythonJsonDumps(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return pythonJsonString(value);
  if (typeof value === 'number')
    return Number.isFinite(value) ? JSON.stringify(value) : value > 0 ? 'Infinity' : value < 0 ? '-Infinity' : 'NaN';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map((item) => pythonJsonDumps(item)).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, item]) => item !== undefined);
    return `{${entries.map(([key, item]) => `${pythonJsonString(key)}: ${pythonJsonDumps(item)}`).join(', ')}}`;
  }
  return typeof value === 'bigint' ? value.toString() : 'null';
}
