// `--key`, `--type`, `--key-default` and `--boolean-key`: one value out of the merged metadata.
import { ApplyConfigError } from './errors.ts';
import { isDict, pyJsonDumps, type PyDict, type PyValue } from '@hearth/agent-kit/python-json';
import { pyStr } from './py-json.ts';
import { ensureType } from './value-types.ts';

/** Python's int() of a list index: optional sign, digits with single underscores, spaces around. */
function listIndex(text: string, length: number): number | undefined {
  if (!/^\s*[-+]?[0-9]+(?:_[0-9]+)*\s*$/.test(text)) return undefined;
  const index = Number(text.replaceAll('_', '').trim());
  const resolved = index < 0 ? length + index : index;
  return resolved >= 0 && resolved < length ? resolved : undefined;
}

/**
 * The value at a dotted path (`a.b`, list items by index: `a.0.b`, `a.-1`); undefined when any step
 * is missing or null, as the original treats a null like a missing key.
 */
export function extractKey(config: PyDict, key: string): PyValue | undefined {
  let current: PyValue = config;
  for (const part of key.split('.')) {
    if (isDict(current)) {
      const next = current.get(part);
      if (next === undefined || next === null) return undefined;
      current = next;
    } else if (Array.isArray(current)) {
      const index = listIndex(part, current.length);
      if (index === undefined) return undefined;
      current = current[index] as PyValue;
    } else return undefined;
  }
  return current === null ? undefined : current;
}

/**
 * What `--key` prints (without the newline): the value (dicts, lists and booleans as JSON), or
 * `fallback` when the key is missing. The type check runs on Python's str() of the value.
 */
export function keyOutput(config: PyDict, key: string, typeName: string, fallback: string | undefined, sources: readonly string[]): string {
  const value = extractKey(config, key);
  if (value === undefined) {
    if (fallback !== undefined) return fallback;
    throw new ApplyConfigError(`key ${key} does not exist in [${sources.map((source) => `'${source}'`).join(', ')}]`);
  }
  ensureType(pyStr(value), typeName);
  return isDict(value) || Array.isArray(value) || typeof value === 'boolean' ? pyJsonDumps(value) : pyStr(value);
}

/** `--boolean-key`: exit code 0 for true, 1 for false, 255 (the original's -1) for anything else or missing. */
export function booleanKeyExitCode(config: PyDict, key: string): number {
  const value = extractKey(config, key);
  if (typeof value !== 'boolean') return 255;
  return value ? 0 : 1;
}
