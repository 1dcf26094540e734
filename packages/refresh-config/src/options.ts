// os-refresh-config's command line, parsed as its argparse parser would accept it (long options,
// unique prefixes, `--flag value` and `--flag=value`), normalised and frozen.
import { parseArgs } from 'node:util';

/** os-refresh-config's `--log-level` choices, as it spells them. */
export const LOG_LEVELS = ['ERROR', 'WARN', 'CRITICAL', 'INFO', 'DEBUG'] as const;

/** One of LOG_LEVELS. */
export type RefreshLogLevel = (typeof LOG_LEVELS)[number];

/** Options of one os-refresh-config run. */
export interface RefreshOptions {
  /** Print the base dir and exit 0. */
  printBase: boolean;
  /** Print the phases, tab-separated, and exit 0. */
  printPhases: boolean;
  /** Least severe level logged. Default INFO. */
  logLevel: RefreshLogLevel;
  /** `json` (one object per line, default) or `text` (for people: dib-run-parts' own lines and profiling table). */
  logFormat: 'json' | 'text';
  /** Lock file; undefined means the default from the agent paths (/var/run/os-refresh-config.lock). */
  lockFile: string | undefined;
  /** Seconds before every child is SIGKILLed; undefined (or 0) means none. */
  timeoutSeconds: number | undefined;
  /** Print the usage and exit 0. */
  help: boolean;
}

/** A command line os-refresh-config refuses (argparse exits 2 for these). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE = `usage: os-refresh-config [-h] [--print-base] [--print-phases] [--log-level {${LOG_LEVELS.join(',')}}]
                         [--log-format {json,text}] [--lockfile LOCKFILE] [--timeout TIMEOUT]

Runs through all of the phases (pre-configure, configure, post-configure, migration) to ensure
configuration is applied and enabled on a machine; runs error.d and exits 1 if any phase fails.
Set OS_REFRESH_CONFIG_BASE_DIR to override the default base dir (/usr/libexec/os-refresh-config).

options:
  -h, --help            show this help message and exit
  --print-base          Print base dir and exit
  --print-phases        Print phases (tab separated) and exit
  --log-level {${LOG_LEVELS.join(',')}}
  --log-format {json,text}
                        json: one object per line (default); text: for people, with
                        dib-run-parts' own lines and profiling table
  --lockfile LOCKFILE   Lock file to prevent multiple running copies (exits 11 if held).
  --timeout TIMEOUT     Seconds until the current run will be terminated.
`;

const LONG_OPTIONS = ['help', 'print-base', 'print-phases', 'log-level', 'log-format', 'lockfile', 'timeout'];
const VALUE_OPTIONS = ['log-level', 'log-format', 'lockfile', 'timeout'];
/** hearth's addition: a prefix is matched against the original's options first, so `--log` stays --log-level. */
const HEARTH_ONLY_OPTIONS = ['log-format'];

/**
 * Whether argparse reads a token as an option rather than a value: not a negative number or `-`
 * alone, nor text with a space unless it still reads as an option (`--lockfile=a b`, `-h x`).
 */
function looksLikeOption(token: string): boolean {
  if (!token.startsWith('-') || token === '-' || /^-\d+$|^-\d*\.\d+$/.test(token)) return false;
  if (!token.includes(' ')) return true;
  if (!token.startsWith('--')) return token[1] === 'h';
  const head = token.slice(2).split('=', 1)[0] ?? '';
  return LONG_OPTIONS.some((option) => option.startsWith(head));
}

function longOption(given: string): string | undefined {
  if (LONG_OPTIONS.includes(given)) return given;
  const all = LONG_OPTIONS.filter((option) => option.startsWith(given));
  const original = all.filter((option) => !HEARTH_ONLY_OPTIONS.includes(option));
  const matches = original.length > 0 ? original : all;
  if (matches.length > 1) throw new UsageError(`ambiguous option: --${given} could match ${matches.map((m) => `--${m}`).join(', ')}`);
  return matches[0];
}

/** Expands unique prefixes of long options (`--print-b` -> `--print-base`) and joins `--timeout -5` as `--timeout=-5`, as argparse reads them. */
function expandPrefixes(argv: string[]): string[] {
  const tokens: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] ?? '';
    if (arg === '--') {
      tokens.push(...argv.slice(index));
      break;
    }
    if (!arg.startsWith('--') || !looksLikeOption(arg)) {
      tokens.push(arg);
      continue;
    }
    const equals = arg.indexOf('=');
    const name = longOption(equals === -1 ? arg.slice(2) : arg.slice(2, equals));
    if (name === undefined) tokens.push(arg);
    else if (equals !== -1) tokens.push(`--${name}${arg.slice(equals)}`);
    else if (!VALUE_OPTIONS.includes(name)) tokens.push(`--${name}`);
    else {
      const value = argv[index + 1];
      if (value === undefined || looksLikeOption(value)) throw new UsageError(`argument --${name}: expected one argument`);
      tokens.push(`--${name}=${value}`);
      index++;
    }
  }
  return tokens;
}

function choice<T extends string>(name: string, value: string | undefined, choices: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if ((choices as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`argument --${name}: invalid choice: '${value}' (choose from ${choices.map((c) => `'${c}'`).join(', ')})`);
}

/** Parses os-refresh-config's argv (without node and script); throws UsageError naming what was wrong. */
export function parseRefreshArgs(argv: string[]): Readonly<RefreshOptions> {
  let values;
  try {
    ({ values } = parseArgs({
      args: expandPrefixes(argv),
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: 'boolean', short: 'h' },
        'print-base': { type: 'boolean' },
        'print-phases': { type: 'boolean' },
        'log-level': { type: 'string' },
        'log-format': { type: 'string' },
        lockfile: { type: 'string' },
        timeout: { type: 'string' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const timeout = values.timeout;
  if (timeout !== undefined && !/^\s*[-+]?\d+\s*$/.test(timeout))
    throw new UsageError(`argument --timeout: invalid int value: '${timeout}'`);
  const timeoutSeconds = timeout === undefined ? undefined : Number(timeout);
  if (timeoutSeconds !== undefined && timeoutSeconds < 0) throw new UsageError(`argument --timeout: must not be negative: '${timeout}'`);
  return Object.freeze({
    printBase: values['print-base'] ?? false,
    printPhases: values['print-phases'] ?? false,
    logLevel: choice('log-level', values['log-level'], LOG_LEVELS, 'INFO'),
    logFormat: choice('log-format', values['log-format'], ['json', 'text'] as const, 'json'),
    lockFile: values.lockfile,
    timeoutSeconds: timeoutSeconds === 0 ? undefined : timeoutSeconds,
    help: values.help ?? false,
  });
}
