// cfn-signal's command line: the original's flags (-s -r -d -i -e --exit -k, URL positional) plus
// --retries, --timeout and --retry-delay; parsed, normalized and frozen in one place.
import { readFileSync } from 'node:fs';
import { ExitError } from '@hearth/agent-kit/exit';
import { parseFlags, stringFlag } from '../shared/args.ts';

/** The usage text printed with a usage error or `--help`. */
export const CFN_SIGNAL_USAGE = `usage: cfn-signal [-s true|false] [-r REASON] [-d DATA|@FILE] [-i ID] [-e EXIT_CODE] [-k]
                  [--retries N] [--timeout SECONDS] [--retry-delay SECONDS] URL
Signals a wait condition handle: PUT URL with {"Status", "Reason", "UniqueId", "Data"}.`;

const FLAGS = {
  success: { type: 'string', short: 's', default: 'true' },
  reason: { type: 'string', short: 'r', default: 'Configuration Complete' },
  data: { type: 'string', short: 'd', default: 'Application has completed configuration.' },
  id: { type: 'string', short: 'i' },
  'exit-code': { type: 'string', short: 'e' },
  exit: { type: 'string' },
  insecure: { type: 'boolean', short: 'k', default: false },
  retries: { type: 'string', default: '3' },
  timeout: { type: 'string', default: '30' },
  'retry-delay': { type: 'string', default: '1' },
  verbose: { type: 'boolean', short: 'v', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** cfn-signal's options after parsing. */
export interface CfnSignalOptions {
  /** The wait condition handle URL (pre-signed). */
  url: string;
  /** SUCCESS when `-e` is `0`, or without `-e` when `-s` is exactly `true`; else FAILURE. */
  status: 'SUCCESS' | 'FAILURE';
  reason: string;
  /** `-d`, or the content of the file named by `-d @FILE` (`@-`: stdin). */
  data: string;
  /** `-i`; undefined means "look it up" (nova_meta.json, a configured URL, else the host name). */
  uniqueId: string | undefined;
  insecure: boolean;
  /** Extra attempts after a connection error, timeout or 5xx. Default 3. */
  retries: number;
  /** Per attempt, ms. Default 30000. */
  timeoutMs: number;
  /** First wait between attempts, doubled each time, ms. Default 1000. */
  retryDelayMs: number;
  verbose: boolean;
  help: boolean;
  /** `--exit` was used (deprecated). */
  deprecatedExit: boolean;
}

function number(name: string, text: string, min: number): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < min) throw new ExitError(2, `--${name} '${text}' must be a number ≥ ${min}`);
  return value;
}

function readData(value: string): string {
  if (!value.startsWith('@')) return value;
  const file = value.slice(1);
  try {
    return readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (error) {
    throw new ExitError(2, `-d ${value}: cannot read ${file === '-' ? 'stdin' : file}: ${(error as Error).message}`);
  }
}

/** Parses cfn-signal's argv; a usage error is ExitError(2). */
export function parseCfnSignalArgs(argv: string[]): Readonly<CfnSignalOptions> {
  const { values, positionals } = parseFlags(argv, FLAGS, CFN_SIGNAL_USAGE);
  const help = values.help === true;
  if (!help && positionals.length !== 1) {
    throw new ExitError(
      2,
      `${positionals.length === 0 ? 'the wait condition URL is required' : `one URL expected, got ${positionals.length}`}\n${CFN_SIGNAL_USAGE}`,
    );
  }
  const exitCode = stringFlag(values['exit-code']) || stringFlag(values.exit);
  const status = exitCode ? (exitCode === '0' ? 'SUCCESS' : 'FAILURE') : values.success === 'true' ? 'SUCCESS' : 'FAILURE';
  return Object.freeze({
    url: positionals[0] ?? '',
    status,
    reason: values.reason,
    data: help ? values.data : readData(values.data),
    uniqueId: stringFlag(values.id),
    insecure: values.insecure,
    retries: Math.floor(number('retries', values.retries, 0)),
    timeoutMs: number('timeout', values.timeout, 0.001) * 1000,
    retryDelayMs: number('retry-delay', values['retry-delay'], 0) * 1000,
    verbose: values.verbose,
    help,
    deprecatedExit: stringFlag(values.exit) !== undefined,
  });
}
