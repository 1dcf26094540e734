// The long and short flags os-collect-config accepts, and argv rewritten as oslo.config's argparse
// reads it for node:util parseArgs: a long flag may be any unambiguous prefix (an exact flag always
// wins), and a value may start with `-` when it is a negative number, `-` alone or holds a space.
import type { ParseArgsConfig } from 'node:util';
import { ExitError } from '@hearth/agent-kit';
import { flagSpellings, negatedFlags, OPTION_TABLE } from './option-table.ts';

/** parseArgs' flag table. */
export type FlagTable = NonNullable<ParseArgsConfig['options']>;

const EXTRA_FLAGS: FlagTable = {
  'config-file': { type: 'string', multiple: true },
  'config-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  debug: { type: 'boolean', short: 'd' },
  verbose: { type: 'boolean', short: 'v' },
  'log-file': { type: 'string' },
  'log-format': { type: 'string' },
  // oslo.log's flags, which the original lists in --help and units may pass (see logSettings and the README).
  nodebug: { type: 'boolean' },
  logfile: { type: 'string' },
  'log-dir': { type: 'string' },
  logdir: { type: 'string' },
  'log-config-append': { type: 'string' },
  'log-config': { type: 'string' },
  log_config: { type: 'string' },
  'log-date-format': { type: 'string' },
  'syslog-log-facility': { type: 'string' },
  ...Object.fromEntries(
    ['use-syslog', 'use-journal', 'use-json', 'watch-log-file'].flatMap((flag) => [
      [flag, { type: 'boolean' }],
      [`no${flag}`, { type: 'boolean' }],
    ]),
  ),
  status: { type: 'boolean' },
  json: { type: 'boolean' },
  'status-file': { type: 'string' },
};

/**
 * hearth's flags that the original (12.0.0) does not have. A prefix is first matched against the
 * original's flags alone, so one the original accepts (`--log-f` for --log-file, `--ver` for
 * --version) means the same here and is not made ambiguous by an addition.
 */
const HEARTH_ONLY_FLAGS = new Set([
  'cfn-ca-certificate',
  'heat-local-path',
  'heat-timeout',
  'json',
  'keystone-cache-dir',
  'keystone-cache-ttl',
  'log-format',
  'nozaqar-ssl-certificate-validation',
  'nozaqar-use-websockets',
  'status',
  'status-file',
  'verbose',
]);

/** Whether a long flag (without `--`) is one of hearth's additions, which the original does not accept. */
export function isHearthOnlyFlag(flag: string): boolean {
  return HEARTH_ONLY_FLAGS.has(flag) || flag.startsWith('hearth-') || /^(cfn|hearth)-secret-store/.test(flag);
}

/** Every flag parseArgs knows: the option table's spellings (positional collectors aside) and the extra ones. */
export function flagTable(): FlagTable {
  const flags: FlagTable = { ...EXTRA_FLAGS };
  for (const spec of OPTION_TABLE) {
    if (spec.group === 'DEFAULT' && spec.name === 'collectors') continue;
    const [flag, ...aliases] = flagSpellings(spec) as [string, ...string[]];
    flags[flag] = {
      type: spec.kind === 'bool' ? 'boolean' : 'string',
      multiple: spec.kind === 'multi',
      ...(spec.short ? { short: spec.short } : {}),
    };
    for (const alias of aliases) flags[alias] = { type: flags[flag].type, multiple: spec.kind === 'multi' };
    if (spec.kind === 'bool') for (const negated of negatedFlags(spec)) flags[negated] = { type: 'boolean' };
  }
  return flags;
}

/** The long flags (without `--`) that `given` may mean: itself when exact, else those it is a prefix of (the original's first). */
export function longFlagCandidates(given: string, flags: FlagTable): string[] {
  if (Object.hasOwn(flags, given)) return [given];
  const all = Object.keys(flags).filter((flag) => flag.startsWith(given));
  const original = all.filter((flag) => !isHearthOnlyFlag(flag));
  return (original.length > 0 ? original : all).sort();
}

/**
 * Whether argparse reads a token as a flag rather than a value: not a negative number (the parser has
 * no numeric flags) or `-` alone, nor text with a space unless it still reads as a flag (`-cmd x` is
 * -c with `md x`, `--command=a b` is --command).
 */
export function looksLikeFlag(token: string, flags: FlagTable): boolean {
  if (!token.startsWith('-') || token === '-' || /^-\d+$|^-\d*\.\d+$/.test(token)) return false;
  if (!token.includes(' ')) return true;
  if (!token.startsWith('--')) return Object.values(flags).some((flag) => flag.short === token[1]);
  return longFlagCandidates(token.slice(2).split('=', 1)[0] ?? '', flags).length > 0;
}

function usageError(message: string): never {
  throw new ExitError(2, `${message}\nTry 'os-collect-config --help'.`);
}

/** argv with every abbreviated long flag spelled out and every `--flag value` of a string flag joined as `--flag=value`. */
export function expandArgv(argv: readonly string[], flags: FlagTable): string[] {
  const shortFlags = new Map(Object.entries(flags).flatMap(([name, flag]) => (flag.short ? [[flag.short, name] as const] : [])));
  const tokens: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const token = argv[index] as string;
    if (token === '--') {
      tokens.push(...argv.slice(index));
      break;
    }
    let name: string | undefined;
    let attached: string | undefined;
    if (token.startsWith('--') && looksLikeFlag(token, flags)) {
      const equals = token.indexOf('=');
      const given = equals === -1 ? token.slice(2) : token.slice(2, equals);
      const candidates = longFlagCandidates(given, flags);
      if (candidates.length > 1) usageError(`ambiguous option: --${given} could match ${candidates.map((flag) => `--${flag}`).join(', ')}`);
      name = candidates[0];
      attached = equals === -1 ? undefined : token.slice(equals + 1);
    } else if (/^-[^-]$/.test(token)) name = shortFlags.get(token.slice(1));
    // Unknown flags, `-i5`, clustered short flags and positionals are parseArgs' to read (or refuse).
    if (name === undefined) {
      tokens.push(token);
      continue;
    }
    if (flags[name]?.type === 'string' && attached === undefined) {
      const value = argv[index + 1];
      if (value === undefined || looksLikeFlag(value, flags)) usageError(`argument --${name}: expected one argument`);
      attached = value;
      index++;
    }
    tokens.push(attached === undefined ? `--${name}` : `--${name}=${attached}`);
  }
  return tokens;
}
