// `hearth-agent install`: the links an image needs, made by the agent itself so the list of names lives in one
// place: one symlink per command beside the executable (dispatch by the name it is called by) and one launcher
// per hook group in heat-config's hooks dir.
import { chmodSync, existsSync, lstatSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import { AGENT_PATH_DEFAULTS } from '@hearth/agent-kit/paths';
import { DEFAULT_PREFIX, hookLauncher } from './commands.ts';

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

/** Replaces whatever is at `path` (file or link, never a directory) by a symlink to `target`. */
function linkTo(path: string, target: string): void {
  if (existsSync(path) || isLink(path)) {
    if (lstatSync(path).isDirectory()) throw new ExitError(1, `install: ${path} is a directory; remove it first`);
    rmSync(path);
  }
  symlinkSync(target, path);
}

/** True when `path` is a (possibly dangling) symlink. */
function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Creates the command links and hook launchers; returns the paths written (inside root). */
export function install(commands: readonly string[], hooks: readonly string[], options: InstallOptions): string[] {
  const written: string[] = [];
  const binDir = join(options.root, options.prefix, 'bin');
  mkdirSync(binDir, { recursive: true });
  for (const name of commands) {
    const path = join(binDir, name);
    if (join(options.prefix, 'bin', name) === options.agentPath) continue;
    linkTo(path, options.agentPath);
    written.push(path);
  }
  const hooksDir = join(options.root, options.hooksDir);
  mkdirSync(hooksDir, { recursive: true, mode: 0o755 });
  for (const group of hooks) {
    const path = join(hooksDir, group);
    if (isLink(path)) rmSync(path);
    writeFileSync(path, hookLauncher(options.agentPath, group));
    chmodSync(path, 0o755);
    written.push(path);
  }
  return written;
}

/** Usage of `hearth-agent install`. */
export const INSTALL_USAGE = `usage: hearth-agent install [--root DIR] [--prefix DIR] [--agent PATH] [--hooks-dir DIR]

Links every agent command (os-collect-config, cfn-signal, ...) to hearth-agent in <prefix>/bin and writes one
launcher per hook group into the hooks dir, all under --root (default /, a rootfs when baking an image).

  --root DIR       directory standing for / (default /)
  --prefix DIR     install prefix (default ${DEFAULT_PREFIX})
  --agent PATH     hearth-agent's path in the guest (default <prefix>/bin/hearth-agent)
  --hooks-dir DIR  heat-config's hooks dir in the guest (default ${AGENT_PATH_DEFAULTS.heatConfigHooksDir})
`;

/** `hearth-agent install ARGS`: prints each path written; 2 on a bad flag. */
export async function installMain(argv: string[], commands: readonly string[], hooks: readonly string[]): Promise<number> {
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
    root: values['--root'] ?? '/',
    prefix,
    agentPath: values['--agent'] ?? join(prefix, 'bin', 'hearth-agent'),
    hooksDir: values['--hooks-dir'] ?? AGENT_PATH_DEFAULTS.heatConfigHooksDir,
  });
  for (const path of written) process.stdout.write(`${path}\n`);
  return 0;
}
