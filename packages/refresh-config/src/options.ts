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

/** Expands unique prefixes of long options (`--print-b` -> `--print-base`), as argparse does. */
function expandPrefixes(argv: string[]): string[] {
  return argv.map((arg) => {
    if (!arg.startsWith('--') || arg === '--') return arg;
    const [flag = '', ...value] = arg.slice(2).split('=');
    if (LONG_OPTIONS.includes(flag)) return arg;
    const matches = LONG_OPTIONS.filter((option) => option.startsWith(flag));
    if (matches.length > 1) throw new UsageError(`ambiguous option: --${flag} could match ${matches.map((m) => `--${m}`).join(', ')}`);
    if (matches.length === 0) return arg;
    return ['--' + (matches[0] ?? flag), ...value].join('=');
  });
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
