// Where the phase directories live: $OS_REFRESH_CONFIG_BASE_DIR, else /usr/libexec/os-refresh-config,
// or the deprecated /opt/stack/os-config-refresh when only that one exists.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { agentPaths, AGENT_PATH_ENV, HEARTH_ROOT_ENV } from '@hearth/agent-kit/paths';

/** The base dir os-refresh-config used before /usr/libexec/os-refresh-config. */
export const OLD_BASE_DIR = '/opt/stack/os-config-refresh';

/** The base dir, and whether it is the deprecated one (worth a warning). */
export interface BaseDir {
  dir: string;
  deprecated: boolean;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** Resolves the base dir from `env` (default process.env); HEARTH_ROOT prefixes both defaults. */
export function resolveBaseDir(env: NodeJS.ProcessEnv = process.env): BaseDir {
  const dir = agentPaths(env).refreshBaseDir;
  const explicit = env[AGENT_PATH_ENV.refreshBaseDir];
  if (explicit !== undefined && explicit !== '') return { dir, deprecated: false };
  const root = env[HEARTH_ROOT_ENV];
  const old = root ? join(root, OLD_BASE_DIR) : OLD_BASE_DIR;
  if (isDirectory(old) && !isDirectory(dir)) return { dir: old, deprecated: true };
  return { dir, deprecated: false };
}
