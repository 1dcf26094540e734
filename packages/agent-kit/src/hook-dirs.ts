// Where the heat-config hooks keep their files, by the convention of Heat's hooks: shared by the hooks,
// which write there, and heat-config, which prunes what a deployment gone for good left there.
import { join } from 'node:path';

/** Env var that prefixes every default path (not explicit overrides), as in agentPaths. */
const ROOT_ENV = 'HEARTH_ROOT';

/** A path from `envVar` when set and non-empty, else `defaultPath` (prefixed with HEARTH_ROOT when that is set). */
export function hookPath(envVar: string, defaultPath: string, env: NodeJS.ProcessEnv = process.env): string {
  const override = env[envVar];
  if (override !== undefined && override !== '') return override;
  const root = env[ROOT_ENV];
  return root ? join(root, defaultPath) : defaultPath;
}

/** A hook's working and outputs directories. */
export interface HookDirs {
  /** Where the hook writes the tool's files. Default /var/lib/heat-config/heat-config-<group>. */
  working: string;
  /** Where the tool writes `<id>.<output>` files. Default /var/run/heat-config/heat-config-<group>. */
  outputs: string;
}

/** `docker-compose` -> `HEAT_DOCKER_COMPOSE`, the prefix of a hook's env vars. */
export function hookEnvPrefix(group: string): string {
  return 'HEAT_' + group.toUpperCase().replace(/[^A-Z0-9]/g, '_');
}

/**
 * The working and outputs dirs of hook `group`, overridable by `HEAT_<GROUP>_WORKING` and `HEAT_<GROUP>_OUTPUTS`
 * (e.g. HEAT_SCRIPT_WORKING), as the original hooks are.
 */
export function hookDirs(group: string, env: NodeJS.ProcessEnv = process.env): HookDirs {
  const prefix = hookEnvPrefix(group);
  return {
    working: hookPath(`${prefix}_WORKING`, `/var/lib/heat-config/heat-config-${group}`, env),
    outputs: hookPath(`${prefix}_OUTPUTS`, `/var/run/heat-config/heat-config-${group}`, env),
  };
}
