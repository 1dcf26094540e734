// `hearth-agent install`: the links an image needs, made by the agent itself so the list of names lives in one
// place: one symlink per command beside the executable (dispatch by the name it is called by) and one launcher
// per hook group in heat-config's hooks dir. What stood there and was not hearth-agent's is kept beside it.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import { AGENT_PATH_DEFAULTS, HEARTH_ROOT_ENV } from '@hearth/agent-kit/paths';
import { DEFAULT_PREFIX, hookLauncher } from './commands.ts';
import { DEFAULT_PATH, findProblems } from './install-path.ts';
import { BACKUP_SUFFIX, checkSlots, entryAt, isAgentLink, isLauncher, keepForeign } from './install-slots.ts';

/** Options of install. */
export interface InstallOptions {
  /** Directory standing for `/` (a rootfs being baked). Default `/`. */
  root: string;
  /** Install prefix inside root: links go to `<prefix>/bin`. Default /usr. */
  prefix: string;
  /** The agent's path as the guest sees it. Default `<prefix>/bin/hearth-agent`. */
  agentPath: string;
  /** Hooks dir as the guest sees it. Default /var/lib/heat-config/hooks. */
  hooksDir: string;
}

/** The guest paths that Debian packages in `root` own (every line of `/var/lib/dpkg/info/*.list`); empty without dpkg. */
function dpkgOwnedPaths(root: string): Set<string> {
  const info = join(root, 'var/lib/dpkg/info');
  const owned = new Set<string>();
  let lists: string[];
  try {
    lists = readdirSync(info).filter((name) => name.endsWith('.list'));
  } catch {
    return owned;
  }
  for (const list of lists) for (const line of readFileSync(join(info, list), 'utf8').split('\n')) owned.add(line);
  return owned;
}

/**
 * Diverts a file a Debian package owns (Debian's os-collect-config, heat-cfntools) to `<path>.distrib`, as a
 * package replacing another's file does, so that upgrading that package writes there instead of silently putting
 * the Python tool back behind hearth's units. Without dpkg-divert, warns and goes on. Again on the same path: a no-op.
 */
function divertFromPackage(root: string, guestPath: string, warn: (message: string) => void): void {
  const args = [...(root === '/' ? [] : [`--root=${root}`]), '--local', '--rename', '--divert', `${guestPath}.distrib`, '--add', guestPath];
  const divert = spawnSync('dpkg-divert', args, { encoding: 'utf8' });
  if (divert.error !== undefined || divert.status !== 0) {
    warn(
      `install: ${guestPath} belongs to a Debian package and could not be diverted (${divert.error?.message ?? divert.stderr.trim()}); ` +
        'hearth-agent replaces it, but upgrading that package puts it back: remove the package first',
    );
  }
}

/**
 * Creates the command links and hook launchers; returns the paths written (inside root). A command or hook that was
 * there and is not hearth-agent's is kept as `<path>.pre-hearth`; a directory in the way, or a backup name already
 * taken, fails before anything is written. Warns when the guest would not find the commands by name.
 */
export function install(
  commands: readonly string[],
  hooks: readonly string[],
  options: InstallOptions,
  warn: (message: string) => void = (message) => process.stderr.write(`${message}\n`),
): string[] {
  const binDir = join(options.root, options.prefix, 'bin');
  const hooksDir = join(options.root, options.hooksDir);
  const links = commands
    .filter((name) => join(options.prefix, 'bin', name) !== options.agentPath)
    .map((name) => ({ name, path: join(binDir, name), isOurs: isAgentLink(options.agentPath) }));
  const launchers = hooks.map((group) => ({ group, path: join(hooksDir, group), isOurs: isLauncher }));
  checkSlots([...links, ...launchers]);

  const written: string[] = [];
  mkdirSync(binDir, { recursive: true });
  const owned = dpkgOwnedPaths(options.root);
  for (const link of links) {
    const guestPath = join(options.prefix, 'bin', link.name);
    if (owned.has(guestPath)) divertFromPackage(options.root, guestPath, warn);
    // Again on the same agent: the link stays as it is.
    if (entryAt(link.path)?.isSymbolicLink() && readlinkSync(link.path) === options.agentPath) {
      written.push(link.path);
      continue;
    }
    keepForeign(link, warn);
    if (entryAt(link.path) !== undefined) rmSync(link.path); // a link to another hearth-agent
    symlinkSync(options.agentPath, link.path);
    written.push(link.path);
  }
  mkdirSync(hooksDir, { recursive: true, mode: 0o755 });
  for (const launcher of launchers) {
    keepForeign(launcher, warn);
    writeFileSync(launcher.path, hookLauncher(options.agentPath, launcher.group));
    chmodSync(launcher.path, 0o755);
    written.push(launcher.path);
  }
  for (const problem of findProblems(options.root, join(options.prefix, 'bin'), commands, options.agentPath)) warn(`install: ${problem}`);
  return written;
}

/** Usage of `hearth-agent install`. */
export const INSTALL_USAGE = `usage: hearth-agent install [--root DIR] [--prefix DIR] [--agent PATH] [--hooks-dir DIR]

Links every agent command (os-collect-config, cfn-signal, ...) to hearth-agent in <prefix>/bin and writes one
launcher per hook group into the hooks dir, all under --root (default $HEARTH_ROOT, else /; a rootfs when baking
an image). Running it again changes nothing.
A command a Debian package owns (python3-os-collect-config, heat-cfntools) is first diverted to <name>.distrib
with dpkg-divert, so that upgrading the package does not put its file back. Any other command or hook that is
not hearth-agent's (pip's os-collect-config, a wrapper of yours) is kept as <name>${BACKUP_SUFFIX}, and said so on
stderr; when that name is taken already, install changes nothing and exits 1. It warns when the commands
would not be found by name on the default PATH (${DEFAULT_PATH.join(':')}) or another file of the same name
comes first there, and when a unit's ExecStart= names a program that is not there.

  --root DIR       directory standing for / (default $HEARTH_ROOT, else /)
  --prefix DIR     install prefix (default ${DEFAULT_PREFIX})
  --agent PATH     hearth-agent's path in the guest (default <prefix>/bin/hearth-agent)
  --hooks-dir DIR  heat-config's hooks dir in the guest (default ${AGENT_PATH_DEFAULTS.heatConfigHooksDir})
`;

/** `hearth-agent install ARGS`: prints each path written; 1 when something is in the way, 2 on a bad flag. */
export async function installMain(
  argv: string[],
  commands: readonly string[],
  hooks: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const values: Record<string, string> = {};
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i]!;
    if (flag === '--help' || flag === '-h') {
      process.stdout.write(INSTALL_USAGE);
      return 0;
    }
    const value = argv[i + 1];
    if (!['--root', '--prefix', '--agent', '--hooks-dir'].includes(flag) || value === undefined || value === '') {
      throw new ExitError(
        2,
        `install: unexpected argument ${JSON.stringify(flag)}${value === undefined ? '' : ' (or its value is missing)'}\n${INSTALL_USAGE}`,
      );
    }
    values[flag] = value;
    i += 1;
  }
  const prefix = values['--prefix'] ?? DEFAULT_PREFIX;
  const written = install(commands, hooks, {
    // HEARTH_ROOT, as every agent and clean honour it: a rootfs, never the host's /usr by mistake.
    root: resolve(values['--root'] ?? (env[HEARTH_ROOT_ENV] || '/')),
    prefix,
    agentPath: values['--agent'] ?? join(prefix, 'bin', 'hearth-agent'),
    hooksDir: values['--hooks-dir'] ?? AGENT_PATH_DEFAULTS.heatConfigHooksDir,
  });
  for (const path of written) process.stdout.write(`${path}\n`);
  return 0;
}
