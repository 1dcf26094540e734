// `hearth-agent clean`: forget this instance before the disk is captured as an image (like `cloud-init clean`):
// its identity and metadata, the collectors' caches, the deployed markers, the signal outbox and every credential,
// including those in a keyring the config names (clean-keyring.ts).
// What the image itself provides (hook launchers, templates, local-data, units, cfn-hup hooks) stays.
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { HEARTH_ROOT_ENV, agentPaths } from '@hearth/agent-kit/paths';
import { ExitError } from '@hearth/agent-kit/exit';
import { insideRoot } from './inside-root.ts';

/** Options of clean. */
export interface CleanOptions {
  /** List what would go, remove nothing. Default false. */
  dryRun: boolean;
  /** Keep /etc/os-collect-config.conf (it holds the server's credential once rendered). Default false. */
  keepConfig: boolean;
  /** Environment the paths come from (HEARTH_ROOT and the per-path overrides). Default process.env. */
  env: NodeJS.ProcessEnv;
}

/** One thing clean removes, with why. */
export interface CleanTarget {
  /** Absolute path. */
  path: string;
  /** What it is, for the listing. */
  what: string;
}

/** The entries of `dir` except `keep`, each as a target. */
function entriesOf(dir: string, what: string, keep: ReadonlySet<string> = new Set()): CleanTarget[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => !keep.has(name))
    .sort()
    .map((name) => ({ path: join(dir, name), what }));
}

/** The single file `path` as a target when it exists. */
function fileAt(path: string, what: string): CleanTarget[] {
  return existsSync(path) ? [{ path, what }] : [];
}

/** Everything clean would remove under the given options' paths, in a stable order. */
export function cleanTargets(options: Pick<CleanOptions, 'keepConfig' | 'env'>): CleanTarget[] {
  const root = options.env[HEARTH_ROOT_ENV] ? resolve(options.env[HEARTH_ROOT_ENV]) : '/';
  // A dir under HEARTH_ROOT is resolved inside it; a file keeps its own name (rmSync removes a link, not its target).
  const dirAt = (path: string) => {
    if (root === '/' || !resolve(path).startsWith(`${root}/`)) return path;
    const inside = insideRoot(root, resolve(path));
    if (inside === undefined) throw new ExitError(1, `clean: too many symbolic links in ${path}; nothing was removed`);
    return inside;
  };
  const fileIn = (path: string) => join(dirAt(dirname(path)), basename(path));
  const paths = agentPaths(options.env);
  // The hooks live in heat-config's dir and local-data in the collector's cache dir by default: both are the image's.
  const keepInHeatConfig =
    dirname(paths.heatConfigHooksDir) === paths.heatConfigDir ? new Set([basename(paths.heatConfigHooksDir)]) : undefined;
  const keepInCache = dirname(paths.localDataDir) === paths.collectCacheDir ? new Set([basename(paths.localDataDir)]) : undefined;
  const targets = [
    ...entriesOf(dirAt(paths.heatCfntoolsDir), 'instance identity and boot data (heat-cfntools)'),
    ...fileAt(fileIn(paths.heatLocalDataPath), 'boot metadata'),
    ...entriesOf(dirAt(paths.cfnCacheDir), 'metadata cache (cfn)'),
    ...fileAt(fileIn(join(paths.cfnConfigDir, 'cfn-credentials')), 'credentials (cfn)'),
    ...entriesOf(dirAt(paths.collectCacheDir), 'metadata cache (os-collect-config)', keepInCache),
    ...entriesOf(dirAt(paths.collectBackupCacheDir), 'metadata cache backup (os-collect-config)'),
    ...entriesOf(dirAt(paths.heatConfigDir), 'deployment state (heat-config)', keepInHeatConfig),
    ...entriesOf(dirAt(paths.heatConfigDeployedDir), 'deployed markers'),
    ...fileAt(fileIn(paths.heatConfigFile), 'rendered deployments'),
    ...entriesOf(dirAt(paths.stateDir), 'outbox, credentials and state (hearth)'),
    ...fileAt(fileIn(paths.refreshLockFile), 'lock'),
    ...(options.keepConfig ? [] : fileAt(fileIn(paths.collectConfigFile), 'collector config with credentials')),
  ];
  // An entry removed whole makes the targets inside it redundant (by default the deployed dir sits in heat-config's dir).
  const seen = new Set<string>();
  return targets.filter((target) => {
    if (seen.has(target.path) || [...seen].some((path) => target.path.startsWith(`${path}/`))) return false;
    seen.add(target.path);
    return true;
  });
}

/** Removes (or with dryRun lists) every clean target; returns what was (or would be) removed. */
export function clean(options: CleanOptions): CleanTarget[] {
  const targets = cleanTargets(options);
  if (!options.dryRun) for (const target of targets) rmSync(target.path, { recursive: true, force: true });
  return targets;
}

/** Usage of `hearth-agent clean`. */
export const CLEAN_USAGE = `usage: hearth-agent clean [--dry-run] [--keep-config]

Forgets this instance before its disk is captured as an image: instance identity and boot data
(/var/lib/heat-cfntools), metadata caches, deployed markers, the rendered deployments, the signal
outbox and credentials (/var/lib/hearth, /etc/cfn/cfn-credentials) and /etc/os-collect-config.conf.
Keeps the hooks, templates, local-data and units. Paths honour HEARTH_ROOT and the per-path env vars.
When os-collect-config.conf ([hearth]/[cfn] secret_store = keyring) or cfn-credentials (HearthSecretStore=keyring)
reads secrets from the keyring, every secret of that keyring service goes too (run it in the agent's session);
exit 1 when they could not be removed.

  --dry-run      print what would be removed, remove nothing
  --keep-config  keep /etc/os-collect-config.conf
`;

/**
 * `hearth-agent clean ARGS`: prints one `removed <path> (<what>)` line per target and per keyring secret; 1 when a
 * keyring the config names could not be emptied (the files are removed all the same); 2 on a bad flag.
 */
export async function cleanMain(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const flags = new Set(argv);
  if (flags.has('--help') || flags.has('-h')) {
    process.stdout.write(CLEAN_USAGE);
    return 0;
  }
  const unknown = argv.filter((arg) => arg !== '--dry-run' && arg !== '--keep-config');
  if (unknown.length > 0) throw new ExitError(2, `clean: unknown argument ${JSON.stringify(unknown[0])}\n${CLEAN_USAGE}`);
  const dryRun = flags.has('--dry-run');
  // Loaded here, not at start-up: the secret store's modules are for clean only. Read before the files go.
  const keyring = await import('./clean-keyring.ts');
  const { services, unreadable } = keyring.keyringServices(env);
  const removed = clean({ dryRun, keepConfig: flags.has('--keep-config'), env });
  const verb = dryRun ? 'would remove' : 'removed';
  for (const target of removed) process.stdout.write(`${verb} ${target.path} (${target.what})\n`);
  const secrets = await keyring.cleanKeyring(services, dryRun, env);
  for (const { service, name } of secrets.removed) process.stdout.write(`${verb} ${name} (keyring service "${service}")\n`);
  // Said on stderr and in the exit code: an image captured now would still hold these credentials.
  for (const { service, message } of secrets.failed) {
    process.stderr.write(
      `hearth-agent clean: the secrets in keyring service "${service}" were NOT removed: ${message}; ` +
        `run clean again where the keyring is reachable, or delete them with hearth-agent secret --backend keyring --service ${service} delete NAME\n`,
    );
  }
  for (const problem of unreadable) {
    process.stderr.write(`hearth-agent clean: cannot read ${problem}; keyring secrets it may name were NOT removed\n`);
  }
  return secrets.failed.length > 0 || unreadable.length > 0 ? 1 : 0;
}
