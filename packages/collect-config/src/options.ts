// Command line and config file -> one frozen CollectOptions (parse -> normalize -> validate ->
// freeze). Precedence as in oslo.config: command line, then the config files, then the default.
import { isAbsolute, join } from 'node:path';
import { parseArgs } from 'node:util';
import { agentPaths, ExitError, loadIniFiles, osloInterpolate, type AgentPaths, type IniDocument } from '@hearth/agent-kit';
import { expandArgv, flagTable } from './cli-flags.ts';
import { configDirFiles, configFiles } from './config-files.ts';
import {
  cliFlag,
  flagSpellings,
  KNOWN_COLLECTORS,
  negatedFlags,
  OPTION_TABLE,
  type CollectorName,
  type OptionSpec,
} from './option-table.ts';
import { checkSecretStores } from './collectors/stored-secret.ts';

export { argvForLog, helpText } from './help-text.ts';

/** A resolved option value. */
export type OptionValue = string | string[] | boolean | number | undefined;

/** Resolved values of one group, by config-file name (underscores). */
export type GroupValues = Readonly<Record<string, OptionValue>>;

/** Everything one run needs, frozen. Durations are in seconds, as the original's options. */
export interface CollectOptions {
  /** Shell command run on change (OS_CONFIG_FILES in its env); undefined = print and exit. */
  command: string | undefined;
  cachedir: string;
  backupCachedir: string;
  collectors: readonly CollectorName[];
  /** True when the collectors came from the defaults rather than the command line or a file. */
  collectorsDefaulted: boolean;
  oneTime: boolean;
  force: boolean;
  printOnly: boolean;
  printCachedir: boolean;
  minPollingInterval: number;
  pollingInterval: number;
  splay: number;
  deploymentKeys: readonly string[];
  /** The config files read, in order (hashed to notice a change: re-exec); the config dir's files are read after them, unhashed. */
  configFiles: readonly string[];
  /** Group options by group (`cfn`, `heat`, …), including DEFAULT. */
  groups: Readonly<Record<string, GroupValues>>;
  /** `--status`: print the running daemon's state and exit. */
  status: boolean;
  /** `--json` with `--status`. */
  json: boolean;
  /** Where the daemon writes its state. Default `<stateDir>/os-collect-config.status.json`. */
  statusFile: string;
  logLevel: 'debug' | 'info' | 'warn';
  logFormat: 'json' | 'text';
  logFile: string | undefined;
  paths: Readonly<AgentPaths>;
}

/** What the command line asks for. */
export type ParsedCommand = { action: 'help' } | { action: 'version' } | { action: 'run'; options: CollectOptions };

const BOOLEAN_WORDS = new Map([
  ['true', true],
  ['1', true],
  ['on', true],
  ['yes', true],
  ['false', false],
  ['0', false],
  ['off', false],
  ['no', false],
]);

function fileValues(ini: IniDocument, group: string, name: string): string[] | undefined {
  const section = ini.get(group);
  return section?.get(name) ?? section?.get(name.replaceAll('_', '-'));
}

function convert(spec: OptionSpec, raw: string[], origin: string): OptionValue {
  const last = raw[raw.length - 1] ?? '';
  switch (spec.kind) {
    case 'multi':
      return raw;
    case 'string':
      return last;
    case 'bool': {
      const value = BOOLEAN_WORDS.get(last.trim().toLowerCase());
      if (value === undefined) throw new ExitError(1, `${origin} must be true or false, got '${last}'`);
      return value;
    }
    case 'float': {
      const value = Number(last.trim());
      if (last.trim() === '' || !Number.isFinite(value)) throw new ExitError(1, `${origin} must be a number, got '${last}'`);
      return value;
    }
  }
}

/** The raw (uninterpolated) strings an option gets from the command line or the files, or undefined. */
function rawValues(
  spec: OptionSpec,
  cli: Record<string, unknown>,
  ini: IniDocument,
  positionals: string[],
): string[] | boolean | undefined {
  // Every spelling counts (--heat_local-path and --heat-local-path accumulate); a string takes the last.
  const given = flagSpellings(spec)
    .map((flag) => cli[flag])
    .flat()
    .filter((value) => value !== undefined);
  let fromCli: unknown = given.length === 0 ? undefined : spec.kind === 'bool' ? given.at(-1) : given;
  if (spec.kind === 'bool' && negatedFlags(spec).some((negated) => cli[negated] === true)) fromCli = false;
  if (spec.group === 'DEFAULT' && spec.name === 'collectors' && positionals.length > 0) fromCli = positionals;
  if (typeof fromCli === 'boolean') return fromCli;
  if (fromCli !== undefined) return ([] as string[]).concat(fromCli as string | string[]);
  const fromFile = fileValues(ini, spec.group, spec.name);
  return fromFile !== undefined && fromFile.length > 0 ? fromFile : undefined;
}

/**
 * Every option's value: command line, else files, else default. As in oslo.config, string values
 * from either source are interpolated (`$name`/`${name}` from the same group, then DEFAULT; `$$` is `$`).
 */
function resolve(
  cli: Record<string, unknown>,
  ini: IniDocument,
  paths: AgentPaths,
  positionals: string[],
): Record<string, Record<string, OptionValue>> {
  const raw = new Map(OPTION_TABLE.map((spec) => [spec, rawValues(spec, cli, ini, positionals)] as const));
  const rawOf = (group: string, name: string): string | undefined => {
    const spec = OPTION_TABLE.find((candidate) => candidate.group === group && candidate.name === name);
    const value = spec ? raw.get(spec) : fileValues(ini, group, name);
    return Array.isArray(value) ? value.at(-1) : typeof value === 'boolean' ? String(value) : undefined;
  };
  const groups: Record<string, Record<string, OptionValue>> = {};
  for (const spec of OPTION_TABLE) {
    const target = (groups[spec.group] ??= {});
    const origin = spec.group === 'DEFAULT' ? `--${cliFlag(spec)}` : `[${spec.group}] ${spec.name}`;
    const value = raw.get(spec);
    if (typeof value === 'boolean') target[spec.name] = value;
    else if (value === undefined) target[spec.name] = spec.fallback?.(paths);
    else {
      const lookup = (name: string): string | undefined => rawOf(spec.group, name) ?? rawOf('DEFAULT', name);
      target[spec.name] = convert(
        spec,
        value.map((text) => osloInterpolate(text, lookup)),
        origin,
      );
    }
  }
  return groups;
}

/** Parses argv (without node and the script) and the config files into what to do. Throws ExitError(2) on a bad flag. */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedCommand {
  const flags = flagTable();
  const args = expandArgv(argv, flags);
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options: flags, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ExitError(2, `${(error as Error).message}\nTry 'os-collect-config --help'.`);
  }
  const cli = parsed.values as Record<string, unknown>;
  if (cli.help === true) return { action: 'help' };
  if (cli.version === true) return { action: 'version' };
  const paths = agentPaths(env);
  const files = configFiles(cli['config-file'] as string[] | undefined, paths, env);
  const ini = loadIniFiles([...files, ...configDirFiles(cli['config-dir'] as string | undefined, paths, env)]);
  const groups = resolve(cli, ini, paths, parsed.positionals);
  const collectorsDefaulted = parsed.positionals.length === 0 && fileValues(ini, 'DEFAULT', 'collectors') === undefined;
  return { action: 'run', options: normalize(groups, cli, files, paths, collectorsDefaulted, logSettings(cli, ini)) };
}

/**
 * oslo.log's `debug`, `log_file` and `log_dir` (`logfile`, `logdir`), from the command line or the
 * files' [DEFAULT]: a log_dir holds log_file, or `os-collect-config.log` when no log_file is given.
 * Its other flags (syslog, journal, json, watch, date format, logging config) are accepted and change
 * nothing: lines go to stderr (the journal, under systemd) or the log file, as JSON unless --log-format text.
 */
function logSettings(cli: Record<string, unknown>, ini: IniDocument): Pick<CollectOptions, 'logLevel' | 'logFile'> {
  const fromFile = (...names: string[]): string | undefined =>
    names.map((name) => fileValues(ini, 'DEFAULT', name)?.at(-1)).find((value) => value !== undefined);
  let debug = cli.nodebug === true ? false : cli.debug === true ? true : undefined;
  if (debug === undefined) {
    const text = fromFile('debug');
    debug = text === undefined ? false : BOOLEAN_WORDS.get(text.trim().toLowerCase());
    if (debug === undefined) throw new ExitError(1, `[DEFAULT] debug must be true or false, got '${text}'`);
  }
  const file = (cli['log-file'] ?? cli.logfile ?? fromFile('log_file', 'logfile')) as string | undefined;
  const dir = (cli['log-dir'] ?? cli.logdir ?? fromFile('log_dir', 'logdir')) as string | undefined;
  const logFile = dir ? (file ? (isAbsolute(file) ? file : join(dir, file)) : join(dir, 'os-collect-config.log')) : file || undefined;
  return { logLevel: debug ? 'debug' : 'info', logFile };
}

/**
 * Each enabled collector's `timeout` must be above 0: the original hands it to requests, which
 * refuses 0 or less with a ValueError on every pass (a traceback, exit 1); ours would never answer.
 */
function checkTimeouts(groups: Record<string, Record<string, OptionValue>>, collectors: readonly string[]): void {
  for (const collector of collectors) {
    const timeout = groups[collector]?.timeout;
    if (typeof timeout === 'number' && !(timeout > 0)) {
      throw new ExitError(1, `[${collector}] timeout (--${collector}-timeout) must be greater than 0 seconds, got ${timeout}`);
    }
  }
}

function normalize(
  groups: Record<string, Record<string, OptionValue>>,
  cli: Record<string, unknown>,
  files: string[],
  paths: AgentPaths,
  collectorsDefaulted: boolean,
  logging: Pick<CollectOptions, 'logLevel' | 'logFile'>,
): CollectOptions {
  const main = groups.DEFAULT ?? {};
  const collectors = main.collectors as string[];
  const unknown = collectors.filter((name) => !(KNOWN_COLLECTORS as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new ExitError(1, `unknown collectors ${JSON.stringify(unknown)}; valid collectors are: ${KNOWN_COLLECTORS.join(' ')}`);
  }
  checkSecretStores(groups);
  checkTimeouts(groups, collectors);
  const logFormat = (cli['log-format'] as string | undefined) ?? 'json';
  if (logFormat !== 'json' && logFormat !== 'text') throw new ExitError(2, `--log-format must be json or text, got '${logFormat}'`);
  const force = main.force === true;
  const positive = (name: string): number => {
    const value = main[name] as number;
    if (value < 0) throw new ExitError(1, `--${name.replaceAll('_', '-')} must not be negative, got ${value}`);
    return value;
  };
  const options: CollectOptions = {
    command: (main.command as string | undefined) || undefined,
    cachedir: main.cachedir as string,
    backupCachedir: main.backup_cachedir as string,
    collectors: collectors as CollectorName[],
    collectorsDefaulted,
    oneTime: main.one_time === true || force,
    force,
    printOnly: main.print === true,
    printCachedir: main.print_cachedir === true,
    minPollingInterval: positive('min_polling_interval'),
    pollingInterval: positive('polling_interval'),
    splay: positive('splay'),
    deploymentKeys: main.deployment_key as string[],
    configFiles: files,
    groups: Object.fromEntries(Object.entries(groups).map(([name, values]) => [name, Object.freeze(values)])),
    status: cli.status === true,
    json: cli.json === true,
    statusFile: (cli['status-file'] as string | undefined) ?? join(paths.stateDir, 'os-collect-config.status.json'),
    ...logging,
    logFormat,
    paths,
  };
  return deepFreeze(options);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const item of Object.values(value)) deepFreeze(item);
  }
  return value;
}
