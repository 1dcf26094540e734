// Every option os-collect-config knows, as oslo.config declares them in the original: a
// `[DEFAULT]` option is `--name` on the command line and `name` in the file; a group option is
// `--<group>-<name>` and `[group] name`. Defaults that are paths come from agent-kit's paths.
import type { AgentPaths } from '@hearth/agent-kit';

/** How a value is read: one string, a repeatable string (oslo MultiStrOpt), a boolean or a float. */
export type OptionKind = 'string' | 'multi' | 'bool' | 'float';

/** One option. `name` is the config-file spelling (underscores). */
export interface OptionSpec {
  group: string;
  name: string;
  kind: OptionKind;
  /** Single-letter CLI alias, if any. */
  short?: string;
  /** Another long flag for the same option (without `--`): the original's own spelling where it differs from cliFlag. */
  alias?: string;
  /** Default value, computed from the agent paths where it is a path; undefined = unset. */
  fallback?: (paths: AgentPaths) => string | string[] | boolean | number;
  help: string;
}

/** The collectors, in the original's default order (zaqar is refused when configured: see README). */
export const DEFAULT_COLLECTORS = ['heat_local', 'ec2', 'cfn', 'heat', 'request', 'local', 'zaqar'] as const;

/** Every collector name accepted on the command line or in `collectors =` lines (hearth's own added). */
export const KNOWN_COLLECTORS = [...DEFAULT_COLLECTORS, 'hearth'] as const;

/** The name of a collector. */
export type CollectorName = (typeof KNOWN_COLLECTORS)[number];

const option = (group: string, name: string, kind: OptionKind, help: string, extra: Partial<OptionSpec> = {}): OptionSpec => ({
  group,
  name,
  kind,
  help,
  ...extra,
});

/** hearth addition: where `group`'s secret_access_key is kept when the config does not give it. */
function secretStoreOptions(group: string): OptionSpec[] {
  return [
    option(
      group,
      'secret_store',
      'string',
      `Without secret_access_key: read it from this store (file|keyring) as ${group}/<access_key_id>`,
    ),
    option(group, 'secret_store_path', 'string', "The file store's file (default <state dir>/credentials.json)"),
    option(group, 'secret_store_service', 'string', "The keyring store's service name (default hearth-agent)"),
  ];
}

/** The options, grouped as the original registers them. */
export const OPTION_TABLE: readonly OptionSpec[] = [
  option('DEFAULT', 'command', 'string', 'Command to run on metadata changes; without it, collect once, print the JSON map and exit', {
    short: 'c',
  }),
  option('DEFAULT', 'cachedir', 'string', 'Directory of the metadata cache', { fallback: (p) => p.collectCacheDir }),
  option('DEFAULT', 'backup_cachedir', 'string', 'Copy of the cache made after every change', {
    fallback: (p) => p.collectBackupCacheDir,
  }),
  option('DEFAULT', 'collectors', 'multi', 'Collectors to run, in this order (positional arguments)', {
    fallback: () => [...DEFAULT_COLLECTORS],
  }),
  option('DEFAULT', 'one_time', 'bool', 'Exit after one pass', { fallback: () => false }),
  option('DEFAULT', 'min_polling_interval', 'float', 'First pause between passes, seconds', { fallback: () => 1 }),
  option('DEFAULT', 'polling_interval', 'float', 'Longest pause between passes, seconds', { short: 'i', fallback: () => 30 }),
  option('DEFAULT', 'print_cachedir', 'bool', 'Print the cache directory and exit', { fallback: () => false }),
  option('DEFAULT', 'force', 'bool', 'Run the command even if nothing changed; implies --one-time', { fallback: () => false }),
  option('DEFAULT', 'print', 'bool', 'Collect, print the JSON map and exit; never stores or runs the command', { fallback: () => false }),
  option('DEFAULT', 'deployment_key', 'multi', 'Top-level keys whose lists are exploded into outputs', {
    fallback: () => ['deployments'],
  }),
  option('DEFAULT', 'splay', 'float', 'Sleep a random 0..splay seconds before the first pass (daemon only)', { fallback: () => 0 }),
  option('ec2', 'metadata_url', 'string', 'EC2 metadata service URL', { fallback: () => 'http://169.254.169.254/latest/meta-data' }),
  option('ec2', 'timeout', 'float', 'Seconds a request may wait for an answer, or for more of its body', { fallback: () => 10 }),
  option('cfn', 'metadata_url', 'string', 'heat-api-cfn URL, e.g. http://host:8000/v1/ (else read from heat_metadata_hint)'),
  option('cfn', 'heat_metadata_hint', 'string', 'File whose content + /v1/ is the metadata URL', {
    fallback: (p) => p.cfnMetadataHintFile,
  }),
  option('cfn', 'ca_certificate', 'string', 'CA certificate file for https', { alias: 'cfn-ca_certificate' }),
  option('cfn', 'stack_name', 'string', 'Stack name to describe'),
  option('cfn', 'path', 'multi', 'Resource.Field[.sub.key] to read, normally <Server>.Metadata'),
  option('cfn', 'secret_access_key', 'string', 'Secret access key'),
  option('cfn', 'access_key_id', 'string', 'Access key id'),
  ...secretStoreOptions('cfn'),
  option('cfn', 'deployment_key', 'multi', 'Deprecated per-collector deployment keys (cfn reads this one)', {
    fallback: () => ['deployments'],
  }),
  option('cfn', 'timeout', 'float', 'Seconds a request may wait for an answer, or for more of its body', { fallback: () => 10 }),
  option('heat', 'user_id', 'string', 'Keystone user id'),
  option('heat', 'password', 'string', 'Keystone password'),
  option('heat', 'project_id', 'string', 'Keystone project id'),
  option('heat', 'auth_url', 'string', 'Keystone URL'),
  option('heat', 'stack_id', 'string', 'Stack, as name/id'),
  option('heat', 'resource_name', 'string', 'Resource whose metadata is read'),
  option('heat', 'region_name', 'string', 'Region of the orchestration endpoint'),
  option('heat', 'timeout', 'float', 'Seconds a request may wait for an answer, or for more of its body (hearth addition)', {
    fallback: () => 10,
  }),
  option('heat_local', 'path', 'multi', 'Files of boot-time metadata', {
    fallback: (p) => [p.heatLocalDataPath],
    alias: 'heat-local-path',
  }),
  option('local', 'path', 'multi', 'Directories of JSON files', { fallback: (p) => [p.localDataDir] }),
  option('request', 'metadata_url', 'string', 'URL to GET the metadata from (e.g. a Swift temp URL)'),
  option('request', 'timeout', 'float', 'Seconds a request may wait for an answer, or for more of its body', { fallback: () => 10 }),
  option('hearth', 'metadata_url', 'string', "hearth-server's guest metadata URL (…/v1/guest/metadata)"),
  option('hearth', 'access_key_id', 'string', "The server's access key id"),
  option('hearth', 'secret_access_key', 'string', "The server's secret"),
  ...secretStoreOptions('hearth'),
  option('hearth', 'server_id', 'string', 'The server id (informational)'),
  option('hearth', 'wait', 'float', 'Long-poll hold, seconds (at most 60)', { fallback: () => 55 }),
  option('hearth', 'timeout', 'float', 'Seconds a request may wait for an answer (besides the hold), or for more of its body', {
    fallback: () => 10,
  }),
  option('zaqar', 'user_id', 'string', 'Not supported'),
  option('zaqar', 'password', 'string', 'Not supported'),
  option('zaqar', 'project_id', 'string', 'Not supported'),
  option('zaqar', 'auth_url', 'string', 'Not supported'),
  option('zaqar', 'queue_id', 'string', 'Not supported'),
  option('zaqar', 'use_websockets', 'bool', 'Not supported', { fallback: () => false }),
  option('zaqar', 'region_name', 'string', 'Not supported'),
  option('zaqar', 'ssl_certificate_validation', 'bool', 'Not supported', { fallback: () => false }),
  option('zaqar', 'ca_file', 'string', 'Not supported'),
  option('keystone', 'cache_dir', 'string', 'Accepted and ignored: tokens are not cached (the original never reads its cache either)', {
    alias: 'keystone-cache_dir',
  }),
  option('keystone', 'cache_ttl', 'float', 'Accepted and ignored', { fallback: () => 1800, alias: 'keystone-cache_ttl' }),
];

/** `--polling-interval`, `--cfn-metadata-url`, `--heat_local-path` (oslo keeps the group name as is). */
export function cliFlag(spec: OptionSpec): string {
  const name = spec.name.replaceAll('_', '-');
  return spec.group === 'DEFAULT' ? name : `${spec.group}-${name}`;
}

/** Every long flag that sets the option (without `--`): cliFlag first, then its alias. */
export function flagSpellings(spec: OptionSpec): string[] {
  return spec.alias === undefined ? [cliFlag(spec)] : [cliFlag(spec), spec.alias];
}

/** The flags that set a bool option false: `--noone-time`; in a group oslo's `--zaqar-nouse-websockets` and `--nozaqar-use-websockets`. */
export function negatedFlags(spec: OptionSpec): string[] {
  const flag = cliFlag(spec);
  return spec.group === 'DEFAULT' ? [`no${flag}`] : [`no${flag}`, `${spec.group}-no${spec.name.replaceAll('_', '-')}`];
}
