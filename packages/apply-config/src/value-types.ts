// `--type` checks for `--key`: the original's regular expressions, matched the way Python's
// re.match does (anchored at the start; `$` also matches before one final newline; `\d` is any
// Unicode decimal digit).
import { ApplyConfigError } from './errors.ts';

const END = '(?=\\n?$)';

/** The types `--type` accepts, each with the pattern `str(value)` must match. */
export const VALUE_TYPES: Readonly<Record<string, RegExp>> = Object.freeze({
  int: new RegExp(`^[0-9]+${END}`, 'u'),
  default: new RegExp(`^[A-Za-z0-9_]*${END}`, 'u'),
  netaddress: new RegExp(`^[A-Za-z0-9/.:-]*${END}`, 'u'),
  netdevice: new RegExp(`^[A-Za-z0-9/.:-]*${END}`, 'u'),
  dsn: new RegExp(
    // driver://[username[:password]][@host or file][/dbname][?variable=value]
    `^[a-zA-Z0-9]+://([a-zA-Z0-9+_-]+(:[^@]+)?)?(@?[a-zA-Z0-9/_.-]+)?(/[a-zA-Z0-9_-]+)?(\\?[a-zA-Z0-9=_-]+)?${END}`,
    'u',
  ),
  swiftdevices: new RegExp(`^(r\\p{Nd}+z\\p{Nd}+-[A-Za-z0-9.-_]+:%PORT%/[^,]+,?)+${END}`, 'u'),
  username: new RegExp(`^[A-Za-z0-9_-]+${END}`, 'u'),
  raw: /^/u,
});

/** Thrown for a `--type` that does not exist (the original crashes with a ValueError: exit 1). */
export class UnknownTypeError extends Error {
  override name = 'UnknownTypeError';
}

/** Returns `value` if it matches `typeName`; throws ApplyConfigError (exit 1) if not. */
export function ensureType(value: string, typeName = 'default'): string {
  const pattern = Object.hasOwn(VALUE_TYPES, typeName) ? VALUE_TYPES[typeName] : undefined;
  if (!pattern) {
    throw new UnknownTypeError(`requested validation of unknown type: ${typeName} (known: ${Object.keys(VALUE_TYPES).join(', ')})`);
  }
  if (!pattern.test(value)) throw new ApplyConfigError(`cannot interpret value '${value}' as type ${typeName}`);
  return value;
}
