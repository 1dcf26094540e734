// cfn-push-stats' command line: the last original's flags (Heat removed the tool in 2024), plus --url,
// --access-key/--secret-key, --insecure and --schedule "<cron>" (keep running and push on that schedule).
import { ExitError } from '@hearth/agent-kit/exit';
import { parseFlags, stringFlag } from '../shared/args.ts';

/** The usage text. */
export const CFN_PUSH_STATS_USAGE = `usage: cfn-push-stats [-v] [--credential-file FILE | --access-key K --secret-key S] [--url URL] [--insecure]
                      [--service-failure] [--heartbeat] [--mem-util] [--mem-used] [--mem-avail] [--swap-util] [--swap-used]
                      [--disk-space-util] [--disk-space-used] [--disk-space-avail] [--disk-path PATH] [--cpu-util]
                      [--memory-units U] [--disk-units U] [--watch ALARM] [--metric NAME --units UNIT --value V]
                      [--schedule "CRON"]
Sends PutMetricData (namespace system/linux) to the CloudWatch-compatible endpoint (default: the CFN host, port 8003).`;

/** Size units of --memory-units and --disk-units. */
export const SIZE_UNITS = { bytes: 1, kilobytes: 1024, megabytes: 1024 ** 2, gigabytes: 1024 ** 3 } as const;
/** One size unit. */
export type SizeUnit = keyof typeof SIZE_UNITS;

const FLAGS = {
  verbose: { type: 'boolean', short: 'v', default: false },
  'credential-file': { type: 'string' },
  'access-key': { type: 'string' },
  'secret-key': { type: 'string' },
  url: { type: 'string' },
  insecure: { type: 'boolean', default: false },
  'service-failure': { type: 'boolean', default: false },
  heartbeat: { type: 'boolean', default: false },
  'mem-util': { type: 'boolean', default: false },
  'mem-used': { type: 'boolean', default: false },
  'mem-avail': { type: 'boolean', default: false },
  'swap-util': { type: 'boolean', default: false },
  'swap-used': { type: 'boolean', default: false },
  'disk-space-util': { type: 'boolean', default: false },
  'disk-space-used': { type: 'boolean', default: false },
  'disk-space-avail': { type: 'boolean', default: false },
  'memory-units': { type: 'string', default: 'megabytes' },
  'disk-units': { type: 'string', default: 'megabytes' },
  'disk-path': { type: 'string', default: '/' },
  'cpu-util': { type: 'boolean', default: false },
  haproxy: { type: 'boolean', default: false },
  'haproxy-latency': { type: 'boolean', default: false },
  watch: { type: 'string' },
  metric: { type: 'string' },
  units: { type: 'string' },
  value: { type: 'string' },
  schedule: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** The system metrics that can be asked for, by flag. */
export const SYSTEM_METRICS = [
  'mem-util',
  'mem-used',
  'mem-avail',
  'swap-util',
  'swap-used',
  'disk-space-util',
  'disk-space-used',
  'disk-space-avail',
  'cpu-util',
] as const;
/** One system metric flag. */
export type SystemMetric = (typeof SYSTEM_METRICS)[number];

/** cfn-push-stats' options after parsing. */
export interface CfnPushStatsOptions {
  verbose: boolean;
  credentialFile: string | undefined;
  accessKey: string | undefined;
  secretKey: string | undefined;
  url: string | undefined;
  insecure: boolean;
  serviceFailure: boolean;
  heartbeat: boolean;
  systemMetrics: readonly SystemMetric[];
  memoryUnits: SizeUnit;
  diskUnits: SizeUnit;
  diskPath: string;
  /** `--watch`: the AlarmName dimension. */
  watch: string | undefined;
  /** `--metric/--units/--value`. */
  custom: { name: string; units: string; value: number } | undefined;
  /** Cron expression (node-cron, 5 or 6 fields); undefined: push once and exit. */
  schedule: string | undefined;
  help: boolean;
}

function sizeUnit(flag: string, text: string): SizeUnit {
  const unit = text.toLowerCase();
  if (!Object.hasOwn(SIZE_UNITS, unit)) throw new ExitError(2, `--${flag} '${text}' must be one of ${Object.keys(SIZE_UNITS).join(', ')}`);
  return unit as SizeUnit;
}

/** Parses argv; a usage error is ExitError(2). */
export function parseCfnPushStatsArgs(argv: string[]): Readonly<CfnPushStatsOptions> {
  const { values, positionals } = parseFlags(argv, FLAGS, CFN_PUSH_STATS_USAGE);
  if (positionals.length > 0) throw new ExitError(2, `unexpected argument '${positionals[0]}'\n${CFN_PUSH_STATS_USAGE}`);
  if (values.haproxy || values['haproxy-latency']) {
    throw new ExitError(
      2,
      '--haproxy and --haproxy-latency are not supported by this cfn-push-stats; push the figures with --metric/--units/--value',
    );
  }
  const metric = stringFlag(values.metric);
  const units = stringFlag(values.units);
  const valueText = stringFlag(values.value);
  let custom: CfnPushStatsOptions['custom'];
  if (metric !== undefined || units !== undefined || valueText !== undefined) {
    if (metric === undefined || units === undefined || valueText === undefined)
      throw new ExitError(2, '--metric, --units and --value go together');
    const value = Number(valueText);
    if (valueText.trim() === '' || !Number.isFinite(value)) throw new ExitError(2, `--value '${valueText}' is not a number`);
    custom = { name: metric, units, value };
  }
  return Object.freeze({
    verbose: values.verbose,
    credentialFile: stringFlag(values['credential-file']),
    accessKey: stringFlag(values['access-key']),
    secretKey: stringFlag(values['secret-key']),
    url: stringFlag(values.url),
    insecure: values.insecure,
    serviceFailure: values['service-failure'],
    heartbeat: values.heartbeat,
    systemMetrics: SYSTEM_METRICS.filter((name) => values[name] === true),
    memoryUnits: sizeUnit('memory-units', values['memory-units']),
    diskUnits: sizeUnit('disk-units', values['disk-units']),
    diskPath: values['disk-path'],
    watch: stringFlag(values.watch),
    custom,
    schedule: stringFlag(values.schedule),
    help: values.help,
  });
}
