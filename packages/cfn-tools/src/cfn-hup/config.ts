// cfn-hup's configuration: `<cfnConfigDir>/cfn-hup.conf` ([main]) and hooks from `<cfnConfigDir>/hooks.conf`
// and `*.conf` in the hooks dir (the original read every file there). Parsed, validated and frozen.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import { DEFAULT_SECTION, parseIni, type IniDocument } from '@hearth/agent-kit/ini';
/** heat-cfntools reads its files with Python's ConfigParser, which keeps quotes (oslo.config strips them). */
const CONFIGPARSER = { stripQuotes: false };

/** The events a hook can subscribe to, matched exactly (the original matched substrings). */
export const HOOK_TRIGGERS = ['post.add', 'post.update', 'post.remove', 'service.restarted'] as const;
/** One trigger. */
export type HookTrigger = (typeof HOOK_TRIGGERS)[number];

/** One hook section. */
export interface HookConfig {
  name: string;
  /** The file it came from. */
  file: string;
  triggers: readonly HookTrigger[];
  /** `Resources.<Resource>.Metadata[.<key>...]`, as written. */
  path: string;
  /** The logical resource (second component of path). */
  resource: string;
  /** Keys below the resource's Metadata; empty for the whole Metadata. */
  keys: readonly string[];
  /** Shell command. */
  action: string;
  /** User (name or uid) the action runs as; undefined: the user running cfn-hup. */
  runas: string | undefined;
}

/** The `[main]` section. */
export interface HupMain {
  stack: string;
  /** Required by the original; optional here when the metadata comes with keys from elsewhere is not possible, so still required. */
  credentialFile: string;
  /** Accepted, unused (as in the original). Default nova. */
  region: string;
  /** Minutes between passes. Default 15 (AWS's default; the original parsed 10 and ignored it), also for a bad value. */
  intervalMinutes: number;
  verbose: boolean;
  /** `url` (beyond the original): the CFN API base URL; default from /var/lib/heat-cfntools. */
  url: string | undefined;
  /**
   * `action-timeout` (beyond the original, which ignores the key): seconds a hook action may run before it is stopped,
   * so one hung action cannot hold back every later hook and change. 0: no limit. Default 3600, also for a bad value.
   */
  actionTimeoutSeconds: number;
}

/** Default of `[main] interval`, in minutes (AWS's). */
export const DEFAULT_INTERVAL_MINUTES = 15;

/** Default of `[main] action-timeout`, in seconds: generous for a cfn-init run that installs packages. */
export const DEFAULT_ACTION_TIMEOUT_SECONDS = 3600;

/** Everything a pass needs, plus what tells whether the files changed since. */
export interface HupConfig {
  main: HupMain;
  hooks: readonly HookConfig[];
  /** What was skipped or replaced by a default, and why: one line each, for the log. */
  warnings: readonly string[];
  /** `path:mtime:size` of every file read, to see when they change. */
  signature: string;
}

/** Where the config files are. */
export interface HupConfigFiles {
  mainFile: string;
  hooksFile: string;
  hooksDir: string;
}

/** One section's keys, as ConfigParser hands them over: the section's own value, else [DEFAULT]'s. */
type Lookup = (key: string) => string | undefined;

/** Option names as ConfigParser keeps them: lowercased (`Action =` is `action`). */
function lowerKeys(doc: IniDocument): IniDocument {
  const lowered: IniDocument = new Map();
  for (const [name, section] of doc) {
    const keys = new Map<string, string[]>();
    for (const [key, values] of section) keys.set(key.toLowerCase(), [...(keys.get(key.toLowerCase()) ?? []), ...values]);
    lowered.set(name, keys);
  }
  return lowered;
}

/**
 * The original reads every file into one ConfigParser, so a `[DEFAULT]` key in any file is the
 * fallback of every section in every file; a later file's value wins.
 */
function defaultsOf(docs: ReadonlyArray<{ doc: IniDocument }>): Map<string, string[]> {
  const defaults = new Map<string, string[]>();
  for (const { doc } of docs) for (const [key, values] of doc.get(DEFAULT_SECTION) ?? []) defaults.set(key, values);
  return defaults;
}

function lookupIn(section: Map<string, string[]> | undefined, defaults: Map<string, string[]>): Lookup {
  return (key) => (section?.get(key) ?? defaults.get(key))?.at(-1)?.trim();
}

function truthy(text: string | undefined): boolean {
  return text !== undefined && /^(1|true|yes|on)$/i.test(text);
}

/** The files cfn-hup reads now: the main file, hooks.conf if present, then hooks dir's `*.conf` sorted. */
export function configFileList(files: HupConfigFiles): string[] {
  let dirFiles: string[] = [];
  try {
    dirFiles = readdirSync(files.hooksDir)
      .filter((name) => name.endsWith('.conf'))
      .sort()
      .map((name) => join(files.hooksDir, name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new ExitError(1, `cannot list ${files.hooksDir}: ${(error as Error).message}`);
  }
  return [files.mainFile, files.hooksFile, ...dirFiles];
}

/** `path:mtime:size` of each existing file: changes when a file is edited, added or removed. */
export function filesSignature(paths: string[]): string {
  return paths
    .map((path) => {
      try {
        const stat = statSync(path);
        return `${path}:${stat.mtimeMs}:${stat.size}`;
      } catch {
        return `${path}:-`;
      }
    })
    .join('|');
}

/** A hook section, or what is wrong with it. */
function parseHook(name: string, file: string, get: Lookup): HookConfig | { problem: string } {
  const missing = ['triggers', 'path', 'action'].filter((key) => !get(key));
  if (missing.length > 0) return { problem: `it has no ${missing.join(', ')}; a hook needs triggers, path and action (runas optional)` };
  const triggers = get('triggers')!
    .split(',')
    .map((trigger) => trigger.trim())
    .filter((trigger) => trigger !== '');
  const unknown = triggers.filter((trigger) => !(HOOK_TRIGGERS as readonly string[]).includes(trigger));
  if (unknown.length > 0) return { problem: `unknown trigger '${unknown.join("', '")}'; use ${HOOK_TRIGGERS.join(', ')}` };
  const path = get('path')!;
  const [root, resource, field, ...keys] = path.split('.');
  if (root !== 'Resources' || !resource || (field !== undefined && field !== 'Metadata')) {
    return { problem: `path '${path}' is not Resources.<resource>.Metadata[.<key>...]` };
  }
  return Object.freeze({
    name,
    file,
    triggers: triggers as HookTrigger[],
    path,
    resource,
    keys,
    action: get('action')!,
    runas: get('runas') || undefined,
  });
}

/**
 * Reads and validates the configuration. A missing main file, stack or credential-file, or no usable hook is
 * ExitError(1). A bad hook is skipped and a bad interval or action-timeout replaced by its default, each with a warning,
 * so that one mistake does not stop every other hook (the original refused the whole configuration).
 */
export function loadHupConfig(files: HupConfigFiles): HupConfig {
  const list = configFileList(files);
  const signature = filesSignature(list);
  const docs: Array<{ file: string; doc: IniDocument }> = [];
  const warnings: string[] = [];
  for (const file of list) {
    let doc: IniDocument;
    try {
      doc = parseIni(readFileSync(file, 'utf8'), file, CONFIGPARSER);
    } catch (error) {
      const message = (error as Error).message;
      if (file === files.mainFile) throw new ExitError(1, `cannot read the main configuration ${file}: ${message}`);
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      // the hooks of the other files still run
      warnings.push(`${file} skipped: ${message}`);
      continue;
    }
    docs.push({ file, doc: lowerKeys(doc) });
  }
  const defaults = defaultsOf(docs);
  const mainValue = lookupIn(docs[0]!.doc.get('main'), defaults);
  const stack = mainValue('stack');
  const credentialFile = mainValue('credential-file');
  if (!stack || !credentialFile) {
    throw new ExitError(1, `${files.mainFile}: [main] needs stack and credential-file (got ${stack ? 'no credential-file' : 'no stack'})`);
  }
  const intervalText = mainValue('interval') || String(DEFAULT_INTERVAL_MINUTES);
  let intervalMinutes = Number(intervalText);
  if (!/^\d+$/.test(intervalText) || !Number.isSafeInteger(intervalMinutes) || intervalMinutes < 1) {
    warnings.push(
      `${files.mainFile}: [main] interval '${intervalText}' is not a whole number of minutes ≥ 1; using ${DEFAULT_INTERVAL_MINUTES}`,
    );
    intervalMinutes = DEFAULT_INTERVAL_MINUTES;
  }
  const timeoutText = mainValue('action-timeout') || String(DEFAULT_ACTION_TIMEOUT_SECONDS);
  let actionTimeoutSeconds = Number(timeoutText);
  if (!/^\d+$/.test(timeoutText) || !Number.isSafeInteger(actionTimeoutSeconds)) {
    warnings.push(
      `${files.mainFile}: [main] action-timeout '${timeoutText}' is not a whole number of seconds (0 for no limit); using ${DEFAULT_ACTION_TIMEOUT_SECONDS}`,
    );
    actionTimeoutSeconds = DEFAULT_ACTION_TIMEOUT_SECONDS;
  }
  const main: HupMain = Object.freeze({
    stack,
    credentialFile,
    region: mainValue('region') || 'nova',
    intervalMinutes,
    verbose: truthy(mainValue('verbose')),
    url: mainValue('url') || undefined,
    actionTimeoutSeconds,
  });

  const hooks: HookConfig[] = [];
  const seen = new Map<string, string>();
  for (const { file, doc } of docs) {
    for (const [name, section] of doc) {
      if (name === 'main' || name === DEFAULT_SECTION) continue;
      const earlier = seen.get(name);
      seen.set(name, earlier ?? file);
      const hook =
        earlier === undefined ? parseHook(name, file, lookupIn(section, defaults)) : { problem: `it is already defined in ${earlier}` };
      if ('problem' in hook) warnings.push(`hook [${name}] in ${file} skipped: ${hook.problem}`);
      else hooks.push(hook);
    }
  }
  if (hooks.length === 0) {
    const skipped = warnings.filter((warning) => warning.includes(' skipped: '));
    throw new ExitError(
      1,
      skipped.length > 0
        ? `no usable hooks:\n${skipped.join('\n')}`
        : `no hooks: add a section to ${files.hooksFile} or a *.conf file in ${files.hooksDir}`,
    );
  }
  return Object.freeze({ main, hooks: Object.freeze(hooks), warnings: Object.freeze(warnings), signature });
}
