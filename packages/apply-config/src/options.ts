// Command line of os-apply-config, with the original's flags, defaults and argparse habits:
// `-m a b c` (several values after one flag), unambiguous prefixes of long flags, `-tDIR`.
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { agentPaths } from '@hearth/agent-kit/paths';
import { ExitError } from '@hearth/agent-kit/exit';

/** Everything one run needs, resolved and frozen. */
export interface ApplyConfigOptions {
  /** Template root. Default $OS_CONFIG_APPLIER_TEMPLATES, else /usr/libexec/os-apply-config/templates (or a legacy /opt/stack dir). */
  templates: string;
  /** Output root. Default `/` (`$HEARTH_ROOT` when set, as every default path). */
  output: string;
  /** Metadata files from `-m`; empty: use $OS_CONFIG_FILES or the os_config_files.json list. */
  metadata: string[];
  /** Files always read first (lowest priority). Default last_metadata and the two cfn-init-data copies. */
  fallbackMetadata: string[];
  /** Render but write nothing. Default false. */
  validate: boolean;
  /** Print the template root and exit. */
  printTemplates: boolean;
  /** Dotted key of the sub-dict used as the root. */
  subhash?: string;
  /** Print the value at this dotted key and exit. */
  key?: string;
  /** Type check of `--key`. Default `default`. */
  type: string;
  /** Printed when `--key` is missing. */
  keyDefault?: string;
  /** Exit 0/1/255 for true/false/not a boolean. */
  booleanKey?: string;
  /** JSON list of metadata files. Default $OS_CONFIG_FILES_PATH, else /var/lib/os-collect-config/os_config_files.json. */
  osConfigFiles: string;
  /** The default of osConfigFiles (the deprecated fallback list is read only when that one is used and empty). */
  defaultOsConfigFiles: string;
  /** The deprecated list read when the default one yields nothing. */
  legacyOsConfigFiles: string;
  /** Log lines as JSON (default) or text. */
  logFormat: 'json' | 'text';
  help: boolean;
  version: boolean;
}

const VALUE_FLAGS = ['templates', 'output', 'subhash', 'key', 'type', 'key-default', 'boolean-key', 'os-config-files', 'log-format'];
const LIST_FLAGS = ['metadata', 'fallback-metadata'];
const BOOLEAN_FLAGS = ['validate', 'print-templates', 'version', 'help'];
const SHORT: Record<string, string> = { t: 'templates', o: 'output', m: 'metadata', v: 'validate', s: 'subhash', h: 'help' };
const LONG = [...VALUE_FLAGS, ...LIST_FLAGS, ...BOOLEAN_FLAGS];

function usageError(message: string): never {
  throw new ExitError(2, `${message}\nTry 'os-apply-config --help'.`);
}

function longName(given: string): string {
  if (LONG.includes(given)) return given;
  const candidates = LONG.filter((name) => name.startsWith(given));
  if (candidates.length === 1) return candidates[0] as string;
  return usageError(
    candidates.length
      ? `ambiguous option: --${given} could match ${candidates.map((c) => `--${c}`).join(', ')}`
      : `unrecognized argument: --${given}`,
  );
}

/**
 * As argparse: a negative number or `-` alone is a value, and so is text with a space unless it
 * still reads as a flag (`-my file` is -m with `y file`, `--key=a b` is --key).
 */
function looksLikeFlag(token: string | undefined): boolean {
  if (token === undefined || !token.startsWith('-') || token === '-' || /^-\d+$|^-\d*\.\d+$/.test(token)) return false;
  if (!token.includes(' ')) return true;
  if (!token.startsWith('--')) return SHORT[token[1] as string] !== undefined;
  const head = token.slice(2).split('=', 1)[0] ?? '';
  return LONG.some((name) => name.startsWith(head));
}

/** Rewrites argparse-style argv into `--name=value` tokens; notes which list flags were given with no value. */
function canonicalArgs(argv: readonly string[]): { tokens: string[]; emptyLists: Set<string> } {
  const tokens: string[] = [];
  const emptyLists = new Set<string>();
  for (let index = 0; index < argv.length; index++) {
    const token = argv[index] as string;
    let name: string;
    let attached: string | undefined;
    if (token.startsWith('--') && token.length > 2) {
      const equals = token.indexOf('=');
      name = longName(equals === -1 ? token.slice(2) : token.slice(2, equals));
      attached = equals === -1 ? undefined : token.slice(equals + 1);
    } else if (/^-[a-zA-Z]/.test(token)) {
      const short = SHORT[token[1] as string];
      if (!short) return usageError(`unrecognized argument: ${token}`);
      name = short;
      if (token.length > 2) attached = BOOLEAN_FLAGS.includes(name) ? undefined : token.slice(2);
      if (token.length > 2 && BOOLEAN_FLAGS.includes(name)) return usageError(`unrecognized argument: ${token}`);
    } else return usageError(`unrecognized argument: ${token}`);
    if (BOOLEAN_FLAGS.includes(name)) {
      if (attached !== undefined) return usageError(`--${name}: ignored explicit argument '${attached}'`);
      tokens.push(`--${name}`);
    } else if (LIST_FLAGS.includes(name)) {
      const values: string[] = attached !== undefined ? [attached] : [];
      while (attached === undefined && index + 1 < argv.length && !looksLikeFlag(argv[index + 1])) values.push(argv[++index] as string);
      // argparse keeps only the last occurrence of a list flag: `-m a -m b` reads b alone.
      const earlier = tokens.filter((kept) => !kept.startsWith(`--${name}=`));
      tokens.splice(0, tokens.length, ...earlier, ...values.map((value) => `--${name}=${value}`));
      if (values.length === 0) emptyLists.add(name);
      else emptyLists.delete(name);
    } else {
      const value = attached ?? (looksLikeFlag(argv[index + 1]) ? undefined : argv[++index]);
      if (value === undefined) return usageError(`argument --${name}: expected one argument`);
      tokens.push(`--${name}=${value}`);
    }
  }
  return { tokens, emptyLists };
}

function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/** The default template root, as the original picks it (env, else the new path unless only a legacy one exists). */
export function defaultTemplatesDir(env: NodeJS.ProcessEnv): { path: string; deprecated: boolean } {
  const configured = agentPaths(env).applyTemplatesDir;
  if (env.OS_CONFIG_APPLIER_TEMPLATES !== undefined && env.OS_CONFIG_APPLIER_TEMPLATES !== '')
    return { path: configured, deprecated: false };
  const root = env.HEARTH_ROOT ?? '/';
  let legacy = join(root, '/opt/stack/os-apply-config/templates');
  if (!isDirectory(legacy)) legacy = join(root, '/opt/stack/os-config-applier/templates');
  if (isDirectory(legacy) && !isDirectory(configured)) return { path: legacy, deprecated: true };
  return { path: configured, deprecated: false };
}

/** Parses argv (without node and the script) against env into frozen options; usage errors exit 2. */
export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Readonly<ApplyConfigOptions> {
  const { tokens, emptyLists } = canonicalArgs(argv);
  const { values } = parseArgs({
    args: tokens,
    strict: true,
    allowPositionals: false,
    options: {
      ...Object.fromEntries(VALUE_FLAGS.map((name) => [name, { type: 'string' as const }])),
      ...Object.fromEntries(LIST_FLAGS.map((name) => [name, { type: 'string' as const, multiple: true }])),
      ...Object.fromEntries(BOOLEAN_FLAGS.map((name) => [name, { type: 'boolean' as const }])),
    },
  });
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const list = (name: string): string[] | undefined => values[name] as string[] | undefined;
  const paths = agentPaths(env);
  const defaultOsConfigFiles = env.OS_CONFIG_FILES_PATH ?? join(paths.collectCacheDir, 'os_config_files.json');
  const cloudData = join(env.HEARTH_ROOT ?? '/', '/var/lib/cloud/data/cfn-init-data');
  const logFormat = text('log-format') ?? 'json';
  if (logFormat !== 'json' && logFormat !== 'text')
    usageError(`argument --log-format: invalid choice: '${logFormat}' (choose from 'json', 'text')`);
  return Object.freeze({
    templates: text('templates') ?? defaultTemplatesDir(env).path,
    // Under HEARTH_ROOT (a test root, a rootfs being built) the files go there, never into this machine's /etc.
    output: text('output') ?? env.HEARTH_ROOT ?? '/',
    metadata: list('metadata') ?? [],
    fallbackMetadata:
      list('fallback-metadata') ??
      (emptyLists.has('fallback-metadata') ? [] : [join(paths.cfnCacheDir, 'last_metadata'), paths.heatLocalDataPath, cloudData]),
    validate: values.validate === true,
    printTemplates: values['print-templates'] === true,
    subhash: text('subhash'),
    key: text('key'),
    type: text('type') ?? 'default',
    keyDefault: text('key-default'),
    booleanKey: text('boolean-key'),
    osConfigFiles: text('os-config-files') ?? defaultOsConfigFiles,
    defaultOsConfigFiles,
    legacyOsConfigFiles: join(paths.collectBackupCacheDir, 'os_config_files.json'),
    logFormat,
    help: values.help === true,
    version: values.version === true,
  });
}
