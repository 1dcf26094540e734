// heat-config's options: its command line and the env overrides of 55-heat-config, normalised and frozen.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AGENT_PATH_DEFAULTS, HEARTH_ROOT_ENV, agentPaths, isLogLevel, type LogLevel } from '@hearth/agent-kit';

/** What to do with a deployment whose hook was running when heat-config (or the machine) stopped. */
export type InterruptedPolicy = 'rerun' | 'fail';

/** Hook timeout when the deployment's options give none: 1 hour, in seconds. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 3600;

/** How long a deployment must be missing from the list before its state files are removed: 7 days, in seconds. */
export const DEFAULT_PRUNE_AFTER_SECONDS = 7 * 24 * 3600;

/** Everything one heat-config run needs to know. */
export interface HeatConfigOptions {
  /** The deployments list (JSON). HEAT_SHELL_CONFIG, default /var/run/heat-config/heat-config. */
  configFile: string;
  /** Deployment markers and results. HEAT_CONFIG_DEPLOYED, default /var/lib/heat-config/deployed. */
  deployedDir: string;
  /** Moved to deployedDir when that does not exist. HEAT_CONFIG_DEPLOYED_OLD, default /var/run/heat-config/deployed. */
  oldDeployedDir: string;
  /** Hook dirs searched in order: HEAT_CONFIG_HOOKS (if set), /usr/libexec/heat-config/hooks, /var/lib/heat-config/hooks. */
  hookDirs: readonly string[];
  /** heat-config-notify command (a path, or a name looked up on PATH). HEAT_CONFIG_NOTIFY, default heat-config-notify. */
  notifyCommand: string;
  /** Interrupted deployments: run again (default) or report failed. --interrupted / HEAT_CONFIG_INTERRUPTED. */
  interrupted: InterruptedPolicy;
  /** Hook timeout in s when the deployment's `options.timeout` gives none. --hook-timeout / HEAT_CONFIG_HOOK_TIMEOUT, default 3600. */
  defaultTimeoutSeconds: number;
  /** Wait between SIGTERM and SIGKILL when a hook times out, in ms. HEAT_CONFIG_KILL_GRACE_MS, default 10000. */
  killGraceMs: number;
  /**
   * State files of a deployment missing from the list this long (s) are removed; 0 never removes them.
   * --prune-after / HEAT_CONFIG_PRUNE_AFTER, default 604800 (7 days).
   */
  pruneAfterSeconds: number;
  /** heat-config-notify's outbox: a deployment with a signal queued there is never pruned. HEARTH_OUTBOX_DIR, default /var/lib/hearth/outbox. */
  outboxDir: string;
  /** Log lines as JSON (default) or text. */
  logFormat: 'json' | 'text';
  /** Least severe level logged. Default debug (55-heat-config logs at DEBUG). */
  logLevel: LogLevel;
  /** Print the usage and exit 0. */
  help: boolean;
}

/** A command line or env value heat-config refuses (exit 2). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export const USAGE = `usage: heat-config [-h] [--interrupted {rerun,fail}] [--hook-timeout SECONDS]
                   [--prune-after SECONDS] [--log-format {json,text}]
                   [--log-level {debug,info,warn,error}]

Runs the hook of every deployment in the deployments list (HEAT_SHELL_CONFIG) that is not deployed
yet, and hands each result to heat-config-notify. Installed as os-refresh-config's
configure.d/55-heat-config.

options:
  -h, --help            show this help message and exit
  --interrupted {rerun,fail}
                        a deployment whose hook was running when heat-config or the machine
                        stopped: run it again (default) or report it failed
                        (env HEAT_CONFIG_INTERRUPTED)
  --hook-timeout SECONDS
                        hook timeout when the deployment's options.timeout gives none
                        (default 3600; env HEAT_CONFIG_HOOK_TIMEOUT)
  --prune-after SECONDS
                        remove the state files of a deployment missing from the list for
                        this long (default 604800: 7 days; 0: never; env
                        HEAT_CONFIG_PRUNE_AFTER); kept while it runs or its result is unsent
  --log-format {json,text}
                        json: one object per line on stderr (default); text: for people
  --log-level {debug,info,warn,error}
                        least severe level logged (default debug)

environment:
  HEAT_SHELL_CONFIG     deployments list (default /var/run/heat-config/heat-config)
  HEAT_CONFIG_DEPLOYED  deployed dir (default /var/lib/heat-config/deployed)
  HEAT_CONFIG_DEPLOYED_OLD
                        old deployed dir, moved on first run (default /var/run/heat-config/deployed)
  HEAT_CONFIG_HOOKS     first hook dir searched, before /usr/libexec/heat-config/hooks and
                        /var/lib/heat-config/hooks
  HEAT_CONFIG_NOTIFY    notifier command (default heat-config-notify)
  HEARTH_OUTBOX_DIR     heat-config-notify's outbox, read before pruning (default
                        /var/lib/hearth/outbox)
  HEARTH_ROOT           prefix for every default path (tests)

exit status: 0 when every result was handed to heat-config-notify (failed hooks included),
1 when the deployments list is missing or a result could not be handed over (it is sent again
on the next run; the hook is not run again), 2 on a usage error.
`;

/** `value` with HEARTH_ROOT prefixed when that is set (for defaults only). */
function rooted(env: NodeJS.ProcessEnv, path: string): string {
  const root = env[HEARTH_ROOT_ENV];
  return root ? join(root, path) : path;
}

function positiveSeconds(source: string, value: string): number {
  const seconds = Number(value.trim());
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0)
    throw new UsageError(`${source}: expected a positive number of seconds, got '${value}'`);
  return seconds;
}

function nonNegativeSeconds(source: string, value: string): number {
  const seconds = Number(value.trim());
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0)
    throw new UsageError(`${source}: expected a number of seconds, 0 or more, got '${value}'`);
  return seconds;
}

function policy(source: string, value: string): InterruptedPolicy {
  if (value === 'rerun' || value === 'fail') return value;
  throw new UsageError(`${source}: invalid choice: '${value}' (choose from 'rerun', 'fail')`);
}

/** Parses argv (without node and script) and `env` into frozen options; throws UsageError naming the bad value. */
export function parseHeatConfigArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): Readonly<HeatConfigOptions> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: 'boolean', short: 'h' },
        interrupted: { type: 'string' },
        'hook-timeout': { type: 'string' },
        'prune-after': { type: 'string' },
        'log-format': { type: 'string' },
        'log-level': { type: 'string' },
      },
    }));
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const paths = agentPaths(env);
  const set = (name: string): string | undefined => (env[name] === undefined || env[name] === '' ? undefined : env[name]);
  const logFormat = values['log-format'] ?? 'json';
  if (logFormat !== 'json' && logFormat !== 'text')
    throw new UsageError(`argument --log-format: invalid choice: '${logFormat}' (choose from 'json', 'text')`);
  const logLevel = values['log-level'] ?? 'debug';
  if (!isLogLevel(logLevel))
    throw new UsageError(`argument --log-level: invalid choice: '${logLevel}' (choose from 'debug', 'info', 'warn', 'error')`);
  const interruptedFlag = values.interrupted;
  const interruptedEnv = set('HEAT_CONFIG_INTERRUPTED');
  const timeoutFlag = values['hook-timeout'];
  const timeoutEnv = set('HEAT_CONFIG_HOOK_TIMEOUT');
  const graceEnv = set('HEAT_CONFIG_KILL_GRACE_MS');
  const pruneFlag = values['prune-after'];
  const pruneEnv = set('HEAT_CONFIG_PRUNE_AFTER');
  return Object.freeze({
    configFile: paths.heatConfigFile,
    deployedDir: paths.heatConfigDeployedDir,
    oldDeployedDir: set('HEAT_CONFIG_DEPLOYED_OLD') ?? rooted(env, '/var/run/heat-config/deployed'),
    hookDirs: Object.freeze(
      [set('HEAT_CONFIG_HOOKS'), rooted(env, '/usr/libexec/heat-config/hooks'), rooted(env, AGENT_PATH_DEFAULTS.heatConfigHooksDir)].filter(
        (dir): dir is string => dir !== undefined,
      ),
    ),
    notifyCommand: set('HEAT_CONFIG_NOTIFY') ?? 'heat-config-notify',
    interrupted:
      interruptedFlag !== undefined
        ? policy('argument --interrupted', interruptedFlag)
        : interruptedEnv !== undefined
          ? policy('HEAT_CONFIG_INTERRUPTED', interruptedEnv)
          : 'rerun',
    defaultTimeoutSeconds:
      timeoutFlag !== undefined
        ? positiveSeconds('argument --hook-timeout', timeoutFlag)
        : timeoutEnv !== undefined
          ? positiveSeconds('HEAT_CONFIG_HOOK_TIMEOUT', timeoutEnv)
          : DEFAULT_HOOK_TIMEOUT_SECONDS,
    killGraceMs: graceEnv === undefined ? 10_000 : positiveSeconds('HEAT_CONFIG_KILL_GRACE_MS', graceEnv),
    pruneAfterSeconds:
      pruneFlag !== undefined
        ? nonNegativeSeconds('argument --prune-after', pruneFlag)
        : pruneEnv !== undefined
          ? nonNegativeSeconds('HEAT_CONFIG_PRUNE_AFTER', pruneEnv)
          : DEFAULT_PRUNE_AFTER_SECONDS,
    outboxDir: paths.outboxDir,
    logFormat,
    logLevel,
    help: values.help ?? false,
  });
}

/** A positive number of seconds from a number or numeric text, else NaN. */
function secondsOf(value: unknown): number {
  const seconds = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
  return Number.isFinite(seconds) && seconds > 0 ? seconds : NaN;
}

/**
 * The hook timeout for a deployment, in s: its `options.timeout` when that is a positive number (or
 * numeric text), else its `deploy_timeout` input (hearth-server's deployment timeout), else `fallback`.
 */
export function hookTimeoutSeconds(deploymentOptions: unknown, fallback: number, inputs: unknown = []): number {
  const fromOptions =
    typeof deploymentOptions === 'object' && deploymentOptions !== null
      ? secondsOf((deploymentOptions as { timeout?: unknown }).timeout)
      : NaN;
  if (!Number.isNaN(fromOptions)) return fromOptions;
  const input = Array.isArray(inputs)
    ? (inputs as Array<{ name?: unknown; value?: unknown }>).find((i) => i?.name === 'deploy_timeout')
    : undefined;
  const fromInput = secondsOf(input?.value);
  return Number.isNaN(fromInput) ? fallback : fromInput;
}
