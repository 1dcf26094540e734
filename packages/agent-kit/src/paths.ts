import { join } from 'node:path';

/** Every on-disk location an agent reads or writes; all absolute, all overridable by env. */
export interface AgentPaths {
  /** os-collect-config's config file. Default /etc/os-collect-config.conf. */
  collectConfigFile: string;
  /** os-collect-config's cache dir (`<key>.json`, `.orig`, `.last`). Default /var/lib/os-collect-config. */
  collectCacheDir: string;
  /** Copy of the cache dir made after every change. Default /var/run/os-collect-config. */
  collectBackupCacheDir: string;
  /** heat_local collector's file (boot-time metadata). Default /var/lib/heat-cfntools/cfn-init-data. */
  heatLocalDataPath: string;
  /** local collector's directory of JSON files. Default /var/lib/os-collect-config/local-data. */
  localDataDir: string;
  /** File holding the CFN metadata server URL. Default /var/lib/heat-cfntools/cfn-metadata-server. */
  cfnMetadataHintFile: string;
  /** os-refresh-config's base dir (`<phase>.d`). Default /usr/libexec/os-refresh-config. */
  refreshBaseDir: string;
  /** os-refresh-config's lock file. Default /var/run/os-refresh-config.lock. */
  refreshLockFile: string;
  /** os-apply-config's template root. Default /usr/libexec/os-apply-config/templates. */
  applyTemplatesDir: string;
  /** heat-config's state dir. Default /var/lib/heat-config. */
  heatConfigDir: string;
  /** heat-config's hook dir. Default /var/lib/heat-config/hooks. */
  heatConfigHooksDir: string;
  /** Where heat-config records the deployments it ran. Default /var/lib/heat-config/deployed. */
  heatConfigDeployedDir: string;
  /** The rendered deployments list heat-config reads. Default /var/run/heat-config/heat-config. */
  heatConfigFile: string;
  /** heat-cfntools' config dir (cfn-credentials, cfn-hup.conf, hooks.d). Default /etc/cfn. */
  cfnConfigDir: string;
  /** heat-cfntools' state dir. Default /var/lib/heat-cfntools. */
  heatCfntoolsDir: string;
  /** heat-cfntools' metadata cache (last_metadata). Default /var/cache/heat-cfntools. */
  cfnCacheDir: string;
  /** hearth's own agent state. Default /var/lib/hearth. */
  stateDir: string;
  /** Durable signal outbox. Default /var/lib/hearth/outbox. */
  outboxDir: string;
}

/** The name of one AgentPaths field. */
export type AgentPathName = keyof AgentPaths;

/** Where each path lives when nothing overrides it (before HEARTH_ROOT). */
export const AGENT_PATH_DEFAULTS: Readonly<AgentPaths> = Object.freeze({
  collectConfigFile: '/etc/os-collect-config.conf',
  collectCacheDir: '/var/lib/os-collect-config',
  collectBackupCacheDir: '/var/run/os-collect-config',
  heatLocalDataPath: '/var/lib/heat-cfntools/cfn-init-data',
  localDataDir: '/var/lib/os-collect-config/local-data',
  cfnMetadataHintFile: '/var/lib/heat-cfntools/cfn-metadata-server',
  refreshBaseDir: '/usr/libexec/os-refresh-config',
  refreshLockFile: '/var/run/os-refresh-config.lock',
  applyTemplatesDir: '/usr/libexec/os-apply-config/templates',
  heatConfigDir: '/var/lib/heat-config',
  heatConfigHooksDir: '/var/lib/heat-config/hooks',
  heatConfigDeployedDir: '/var/lib/heat-config/deployed',
  heatConfigFile: '/var/run/heat-config/heat-config',
  cfnConfigDir: '/etc/cfn',
  heatCfntoolsDir: '/var/lib/heat-cfntools',
  cfnCacheDir: '/var/cache/heat-cfntools',
  stateDir: '/var/lib/hearth',
  outboxDir: '/var/lib/hearth/outbox',
});

/** Env vars the replaced tools honour for the same location; every other field uses HEARTH_<FIELD>. */
const ORIGINAL_ENV_VARS: Partial<Record<AgentPathName, string>> = {
  refreshBaseDir: 'OS_REFRESH_CONFIG_BASE_DIR',
  applyTemplatesDir: 'OS_CONFIG_APPLIER_TEMPLATES',
  heatConfigHooksDir: 'HEAT_CONFIG_HOOKS',
  heatConfigDeployedDir: 'HEAT_CONFIG_DEPLOYED',
  heatConfigFile: 'HEAT_SHELL_CONFIG',
};

/** Env var that prefixes every default path (not the explicit overrides); tests point it at a temp dir. */
export const HEARTH_ROOT_ENV = 'HEARTH_ROOT';

/** `collectCacheDir` -> `HEARTH_COLLECT_CACHE_DIR`. */
function hearthEnvName(field: string): string {
  return 'HEARTH_' + field.replace(/[A-Z]/g, (letter) => '_' + letter).toUpperCase();
}

/** The env var that overrides each path, e.g. `{ refreshBaseDir: 'OS_REFRESH_CONFIG_BASE_DIR', stateDir: 'HEARTH_STATE_DIR', ... }`. */
export const AGENT_PATH_ENV: Readonly<Record<AgentPathName, string>> = Object.freeze(
  Object.fromEntries(
    (Object.keys(AGENT_PATH_DEFAULTS) as AgentPathName[]).map((field) => [field, ORIGINAL_ENV_VARS[field] ?? hearthEnvName(field)]),
  ) as Record<AgentPathName, string>,
);

/**
 * Resolves every agent path from `env` (default process.env): an explicit override (non-empty env var) is
 * used as given; otherwise the default, prefixed with `HEARTH_ROOT` when that is set.
 */
export function agentPaths(env: NodeJS.ProcessEnv = process.env): Readonly<AgentPaths> {
  const root = env[HEARTH_ROOT_ENV];
  const paths = {} as AgentPaths;
  for (const field of Object.keys(AGENT_PATH_DEFAULTS) as AgentPathName[]) {
    const override = env[AGENT_PATH_ENV[field]];
    if (override !== undefined && override !== '') paths[field] = override;
    else paths[field] = root ? join(root, AGENT_PATH_DEFAULTS[field]) : AGENT_PATH_DEFAULTS[field];
  }
  return Object.freeze(paths);
}
