// Command line and env -> one frozen NotifyOptions (parse -> normalize -> validate -> freeze).
import { parseArgs } from 'node:util';
import { agentPaths, ExitError, isLogLevel, type LogLevel } from '@hearth/agent-kit';
import { DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.ts';
import { EXIT_CONFIG } from './exit-codes.ts';
import { DEFAULT_MAX_BODY_BYTES } from './trim.ts';
import { DEFAULT_LATE_MS } from './attempt.ts';

/** What the command line asks for. */
export type NotifyCommand =
  | { action: 'help' }
  | { action: 'version' }
  | { action: 'notify'; deploymentFile: string; wait: boolean; options: NotifyOptions }
  | { action: 'heartbeat'; deploymentFile: string; message: string | undefined; progress: number | undefined; options: NotifyOptions }
  | { action: 'drain'; mode: 'once' | 'empty' | 'follow'; options: NotifyOptions };

/** Settings every action shares. */
export interface NotifyOptions {
  /** The outbox directory. Default agentPaths().outboxDir (HEARTH_OUTBOX_DIR, /var/lib/hearth/outbox). */
  outboxDir: string;
  backoff: Readonly<BackoffPolicy>;
  /** Limit of one HTTP request, in ms. Default 30000. */
  timeoutMs: number;
  /** Largest signal body sent, in bytes. Default 1048576. */
  maxBodyBytes: number;
  /** How long past its deployment's deadline an undelivered signal is still retried, in ms. Default 3600000. */
  lateMs: number;
  logFormat: 'json' | 'text';
  logLevel: LogLevel;
}

/** Env vars read for the settings (flags win). */
export const NOTIFY_ENV = {
  retryBaseMs: 'HEARTH_NOTIFY_RETRY_BASE_MS',
  retryCapMs: 'HEARTH_NOTIFY_RETRY_CAP_MS',
  timeoutMs: 'HEARTH_NOTIFY_TIMEOUT_MS',
  maxBodyBytes: 'HEARTH_NOTIFY_MAX_BODY_BYTES',
  lateMs: 'HEARTH_NOTIFY_LATE_MS',
  logFormat: 'HEARTH_LOG_FORMAT',
} as const;

/** `heat-config-notify --help`. */
export function helpText(): string {
  return `Usage:
  heat-config-notify [--wait] DEPLOYMENT.json < signal.json
  heat-config-notify --drain [--once | --follow]
  heat-config-notify --heartbeat [--progress N] DEPLOYMENT.json [MESSAGE]

Signals a deployment's result (the JSON on stdin) over the transport its deploy_* inputs name:
HEARTH_SIGNAL, CFN_SIGNAL, TEMP_URL_SIGNAL, HEAT_SIGNAL or NO_SIGNAL. The signal is first written
to the outbox, then sent; one that could not be sent stays queued and is retried with backoff by
--drain (the heat-config-notify.service daemon runs --drain --follow).

Options:
  --wait                 retry until delivered, rejected or --late-ms past the deadline (exit 1 unless delivered)
  --drain                deliver what is queued; ends when the outbox is empty
  --once                 with --drain: one pass over the entries that are due, then exit
  --follow               with --drain: never end; pick up new entries as they are queued
  --heartbeat            send one heartbeat (HEARTH_SIGNAL only; others: nothing, exit 0)
  --progress N           with --heartbeat: percent done (0-100)
  --outbox-dir DIR       default $HEARTH_OUTBOX_DIR or /var/lib/hearth/outbox
  --retry-base-ms MS     ceiling of the first retry wait (default 1000, $${NOTIFY_ENV.retryBaseMs})
  --retry-cap-ms MS      ceiling of any retry wait (default 300000, $${NOTIFY_ENV.retryCapMs})
  --timeout-ms MS        how long an HTTP request waits for an answer (default 30000, $${NOTIFY_ENV.timeoutMs})
  --max-body-bytes N     largest signal body; longer outputs keep their end (default 1048576, $${NOTIFY_ENV.maxBodyBytes})
  --late-ms MS           retry an undelivered signal this long past its deployment's deadline, for
                         a server that was down then (default 3600000, $${NOTIFY_ENV.lateMs}; 0: stop at it)
  --log-format FORMAT    json (default) or text ($${NOTIFY_ENV.logFormat})
  --log-level LEVEL      debug, info (default), warn or error
  -h, --help             this text
  --version              the version

Exit status: 0 delivered, queued, or nothing to send (NO_SIGNAL); 1 a signal settled for good
without delivery: the server rejected it (4xx), the deployment cannot be signalled (ZAQAR_SIGNAL,
missing inputs), or with --wait it was finally not delivered; --drain exits 1 when it dropped a
rejected or expired signal. These mean "nothing sent: fix this machine, hand it over again":
70 an internal error, 75 the outbox could not be written, 78 bad usage, a bad flag or
HEARTH_NOTIFY_*/HEARTH_LOG_FORMAT value, or a deployment file that cannot be read or is not JSON; --drain
exits 78 when outbox entries it cannot read are left (not sent: repair or remove them).
`;
}

/** A setting from its flag, else its env var (empty is unset), and the name of whichever gave it, for errors. */
function setting(flagValue: string | undefined, flag: string, env: NodeJS.ProcessEnv, envVar: string): { value?: string; from: string } {
  if (flagValue !== undefined) return { value: flagValue, from: flag };
  const value = env[envVar];
  return value === undefined || value === '' ? { from: flag } : { value, from: `$${envVar}` };
}

/** A positive integer from a setting, else the default; anything else is ExitError(EXIT_CONFIG) naming the flag or env var. */
function positiveInt({ value, from }: { value?: string; from: string }, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value.trim()) || Number(value) <= 0)
    throw new ExitError(EXIT_CONFIG, `${from} must be a positive whole number, not ${JSON.stringify(value)}`);
  return Number(value);
}

/** A whole number of 0 or more from a flag or env value, else `fallback`. */
function wholeNumber({ value, from }: { value?: string; from: string }, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  if (!/^\d+$/.test(value.trim()))
    throw new ExitError(EXIT_CONFIG, `${from} must be a whole number (0 or more), not ${JSON.stringify(value)}`);
  return Number(value);
}

/** Parses argv (without node and the script) and env into a command. */
export function parseCommandLine(argv: string[], env: NodeJS.ProcessEnv = process.env): NotifyCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        wait: { type: 'boolean' },
        drain: { type: 'boolean' },
        once: { type: 'boolean' },
        follow: { type: 'boolean' },
        heartbeat: { type: 'boolean' },
        progress: { type: 'string' },
        'outbox-dir': { type: 'string' },
        'retry-base-ms': { type: 'string' },
        'retry-cap-ms': { type: 'string' },
        'timeout-ms': { type: 'string' },
        'max-body-bytes': { type: 'string' },
        'late-ms': { type: 'string' },
        'log-format': { type: 'string' },
        'log-level': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
      },
    });
  } catch (error) {
    throw new ExitError(EXIT_CONFIG, `${(error as Error).message}\n\n${helpText()}`);
  }
  const { values, positionals } = parsed;
  if (values.help) return { action: 'help' };
  if (values.version) return { action: 'version' };
  const format = setting(values['log-format'], '--log-format', env, NOTIFY_ENV.logFormat);
  const logFormat = format.value ?? 'json';
  if (logFormat !== 'json' && logFormat !== 'text')
    throw new ExitError(EXIT_CONFIG, `${format.from} must be json or text, not ${JSON.stringify(logFormat)}`);
  const logLevel = values['log-level'] ?? 'info';
  if (!isLogLevel(logLevel))
    throw new ExitError(EXIT_CONFIG, `--log-level must be debug, info, warn or error, not ${JSON.stringify(logLevel)}`);
  const baseMs = positiveInt(setting(values['retry-base-ms'], '--retry-base-ms', env, NOTIFY_ENV.retryBaseMs), DEFAULT_BACKOFF.baseMs);
  const capMs = positiveInt(setting(values['retry-cap-ms'], '--retry-cap-ms', env, NOTIFY_ENV.retryCapMs), DEFAULT_BACKOFF.capMs);
  // An empty one would fail only when the outbox is first written: as a full disk (75) or an internal error (70).
  if (values['outbox-dir']?.trim() === '')
    throw new ExitError(EXIT_CONFIG, `--outbox-dir must name a directory, not ${JSON.stringify(values['outbox-dir'])}`);
  const options: NotifyOptions = Object.freeze({
    outboxDir: values['outbox-dir'] ?? agentPaths(env).outboxDir,
    backoff: Object.freeze({ baseMs, capMs: Math.max(capMs, baseMs) }),
    timeoutMs: positiveInt(setting(values['timeout-ms'], '--timeout-ms', env, NOTIFY_ENV.timeoutMs), 30_000),
    maxBodyBytes: positiveInt(setting(values['max-body-bytes'], '--max-body-bytes', env, NOTIFY_ENV.maxBodyBytes), DEFAULT_MAX_BODY_BYTES),
    lateMs: wholeNumber(setting(values['late-ms'], '--late-ms', env, NOTIFY_ENV.lateMs), DEFAULT_LATE_MS),
    logFormat,
    logLevel,
  });
  const modes = [values.drain, values.heartbeat].filter(Boolean).length;
  if (modes > 1) throw new ExitError(EXIT_CONFIG, '--drain and --heartbeat cannot be combined');
  if ((values.once || values.follow) && !values.drain) throw new ExitError(EXIT_CONFIG, '--once and --follow go with --drain');
  if (values.progress !== undefined && !values.heartbeat) throw new ExitError(EXIT_CONFIG, '--progress goes with --heartbeat');
  if (values.drain) {
    if (values.once && values.follow) throw new ExitError(EXIT_CONFIG, '--once and --follow cannot be combined');
    if (positionals.length > 0) throw new ExitError(EXIT_CONFIG, `--drain takes no arguments (got ${positionals.join(' ')})`);
    if (values.wait) throw new ExitError(EXIT_CONFIG, '--wait goes with a deployment file, not --drain');
    return { action: 'drain', mode: values.once ? 'once' : values.follow ? 'follow' : 'empty', options };
  }
  const [deploymentFile, ...rest] = positionals;
  if (deploymentFile === undefined) throw new ExitError(EXIT_CONFIG, `no deployment file given\n\n${helpText()}`);
  if (values.heartbeat) {
    let progress: number | undefined;
    if (values.progress !== undefined) {
      progress = Number(values.progress);
      if (values.progress.trim() === '' || !Number.isFinite(progress) || progress < 0 || progress > 100)
        throw new ExitError(EXIT_CONFIG, `--progress must be a number from 0 to 100, not ${JSON.stringify(values.progress)}`);
    }
    return { action: 'heartbeat', deploymentFile, message: rest.length > 0 ? rest.join(' ') : undefined, progress, options };
  }
  if (rest.length > 0)
    throw new ExitError(EXIT_CONFIG, `one deployment file expected, got ${positionals.length}: ${positionals.join(' ')}`);
  return { action: 'notify', deploymentFile, wait: values.wait ?? false, options };
}
