// Flag parsing shared by the commands: node:util parseArgs, with a usage error as ExitError(2).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ExitError } from '@hearth/agent-kit/exit';

/** The option table parseArgs takes. */
export type FlagSpec = NonNullable<ParseArgsConfig['options']>;

/** A negative number, which argparse takes as a value (none of the originals has a flag like `-1`). */
const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/**
 * Whether argparse (which the originals use) takes `token`, met where an option wants its value, as that value
 * although it starts with `-`: a lone `-`, a negative number, or text with a space that does not begin with a
 * known short flag (`-k y`) or a prefix of a long one before any `=` (`--reason=a b`).
 */
function argparseTakesAsValue(token: string, options: FlagSpec): boolean {
  if (token === '-' || NEGATIVE_NUMBER.test(token)) return true;
  if (!/\s/.test(token)) return false;
  if (token.startsWith('--')) {
    const prefix = token.split('=', 1)[0]!.slice(2);
    return !Object.keys(options).some((name) => name.startsWith(prefix));
  }
  return !Object.values(options).some((option) => option.short === token[1]);
}

/**
 * `--name[=value]` with `name` completed as argparse completes it: an exact name wins, else the one option that
 * starts with it (`--cred` is `--credential-file`); several are an ambiguous option, none is left for parseArgs
 * to refuse as unknown.
 */
function completeLongFlag(token: string, options: FlagSpec): string {
  const equals = token.indexOf('=');
  const written = equals === -1 ? token.slice(2) : token.slice(2, equals);
  if (Object.hasOwn(options, written)) return token;
  const candidates = Object.keys(options).filter((name) => name.startsWith(written));
  if (candidates.length > 1) {
    throw new Error(`ambiguous option: --${written} could match ${candidates.map((name) => `--${name}`).join(', ')}`);
  }
  return candidates.length === 1 ? `--${candidates[0]}${equals === -1 ? '' : token.slice(equals)}` : token;
}

/**
 * Completes abbreviated long flags, and rewrites `-r VALUE` / `--reason VALUE` into `--reason=VALUE` when VALUE
 * starts with `-` but argparse would take it as the value (`-e -1`, `-r "-- install failed"`); parseArgs refuses
 * those otherwise.
 */
function joinDashValues(argv: string[], options: FlagSpec): string[] {
  const out: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const given = argv[index]!;
    if (given === '--') return [...out, ...argv.slice(index)];
    // argparse takes a dash token with a space that names no option as a value, so it is not completed
    const token = given.startsWith('--') && !argparseTakesAsValue(given, options) ? completeLongFlag(given, options) : given;
    const name = token.startsWith('--')
      ? token.slice(2)
      : /^-[^-]$/.test(token)
        ? Object.keys(options).find((key) => options[key]!.short === token[1])
        : undefined;
    const next = argv[index + 1];
    if (name !== undefined && options[name]?.type === 'string' && next?.startsWith('-') && argparseTakesAsValue(next, options)) {
      out.push(`--${name}=${next}`);
      index++;
    } else out.push(token);
  }
  return out;
}

/** Parses `argv` strictly against `options`; an unknown flag or a missing value is ExitError(2) with `usage`. */
export function parseFlags<T extends FlagSpec>(argv: string[], options: T, usage: string) {
  try {
    return parseArgs({ args: joinDashValues(argv, options), options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ExitError(2, `${(error as Error).message}\n${usage}`);
  }
}

/** Whether `--help`/`-h` was asked for (checked before parsing so that it works with other flags missing). */
export function wantsHelp(argv: string[]): boolean {
  return argv.includes('--help');
}

/** A flag value as a string (parseArgs gives string | boolean | array). */
export function stringFlag(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
