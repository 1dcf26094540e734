// Which config files oslo.config would read for os-collect-config: `--config-file` and `--config-dir`,
// else the defaults (~ first, then /etc), as oslo's default search does.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { ExitError, type AgentPaths } from '@hearth/agent-kit';

/** The config files oslo would read: `--config-file` values, else the first of ~/os-collect-config.conf and the default path. */
export function configFiles(cliFiles: string[] | undefined, paths: AgentPaths, env: NodeJS.ProcessEnv): string[] {
  if (cliFiles && cliFiles.length > 0) {
    const missing = cliFiles.filter((file) => !existsSync(file));
    if (missing.length > 0) throw new ExitError(1, `config file not found: ${missing.join(', ')}`);
    // Not a regular-file check: `--config-file /dev/null` (read nothing) is a common idiom.
    const dirs = cliFiles.filter((file) => statSync(file).isDirectory());
    if (dirs.length > 0) throw new ExitError(1, `config file is a directory: ${dirs.join(', ')} (for a directory use --config-dir)`);
    return cliFiles;
  }
  return [...(searchHome(env) ? [join(env.HOME ?? homedir(), 'os-collect-config.conf')] : []), paths.collectConfigFile]
    .filter((file) => existsSync(file))
    .slice(0, 1);
}

/** ~ is searched only when no test root or explicit config path moves the defaults. */
function searchHome(env: NodeJS.ProcessEnv): boolean {
  return env.HEARTH_ROOT === undefined && env.HEARTH_COLLECT_CONFIG_FILE === undefined;
}

/**
 * The `*.conf` files of `--config-dir`, else (as oslo's default) of the first existing of
 * ~/os-collect-config.conf.d and `<config file>.d`, sorted; read after the config files, not hashed.
 */
export function configDirFiles(cliDir: string | undefined, paths: AgentPaths, env: NodeJS.ProcessEnv): string[] {
  let dir = cliDir;
  if (dir !== undefined && !existsSync(dir)) throw new ExitError(1, `config dir not found: ${dir}`);
  dir ??= [...(searchHome(env) ? [join(env.HOME ?? homedir(), 'os-collect-config.conf.d')] : []), `${paths.collectConfigFile}.d`].find(
    (candidate) => existsSync(candidate),
  );
  if (dir === undefined) return [];
  const base = dir;
  return readdirSync(base)
    .filter((name) => name.endsWith('.conf'))
    .sort()
    .map((name) => join(base, name));
}
