import type { Alarm, AlarmCreate, AlarmHistoryItem, ComparisonOperator, MetricStatistic } from '@hearth/protocol';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { collect, parseChoice, parseHttpUrl, parseLimit } from '../flag-values.ts';
import { addExamples, ALARM_EXAMPLES } from '../help-examples.ts';
import { formatFields } from '../output.ts';
import { RESOURCE_NAME_PATTERN } from '../protocol-values.ts';
import { openSession, type CliDeps } from '../session.ts';

// Copies of protocol values (importing @hearth/protocol would load TypeBox on every command);
// alarm.test.ts checks each equals the protocol's.

/** Statistics (protocol METRIC_STATISTICS). */
export const STATISTICS: readonly MetricStatistic[] = ['SampleCount', 'Average', 'Sum', 'Minimum', 'Maximum'];
/** Comparison operators (protocol COMPARISON_OPERATORS). */
export const COMPARISONS: readonly ComparisonOperator[] = [
  'GreaterThanThreshold',
  'GreaterThanOrEqualToThreshold',
  'LessThanThreshold',
  'LessThanOrEqualToThreshold',
];
/** Longest period in seconds (protocol MAX_ALARM_PERIOD). */
export const MAX_ALARM_PERIOD = 86400;
/** Most evaluation periods (protocol MAX_EVALUATION_PERIODS). */
export const MAX_EVALUATION_PERIODS = 100;
/** Most action URLs per state (protocol MAX_ALARM_ACTIONS). */
export const MAX_ALARM_ACTIONS = 5;

/** Flags of `hearth alarm create`, as commander hands them over. */
export interface AlarmCreateFlags {
  metric: string;
  namespace?: string;
  dimension?: string[];
  statistic: string;
  period: string;
  evaluationPeriods?: string;
  threshold: string;
  comparison: string;
  alarmAction?: string[];
  okAction?: string[];
  insufficientDataAction?: string[];
  description?: string;
  disabled?: boolean;
  repeatActions?: boolean;
}

/** Parses a whole number in 1..max for `flag`; throws a usage error. */
function wholeNumber(text: string, flag: string, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || value < 1 || value > max)
    throw usageError(`${flag} ${JSON.stringify(text)} is not a whole number from 1 to ${max}`);
  return value;
}

/** Parses repeated `--dimension NAME=VALUE` flags. */
export function parseDimensions(pairs: readonly string[] | undefined): Record<string, string> | undefined {
  if (pairs === undefined || pairs.length === 0) return undefined;
  const dimensions: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1)
      throw usageError(`--dimension ${JSON.stringify(pair)} is not NAME=VALUE`, 'write e.g. --dimension InstanceId=i-123');
    const name = pair.slice(0, eq);
    // On a plain object this name would set the prototype and the dimension would silently vanish.
    if (name === '__proto__') throw usageError(`--dimension ${JSON.stringify(pair)}: hearth-server refuses a name __proto__`, 'rename it');
    dimensions[name] = pair.slice(eq + 1);
  }
  return dimensions;
}

/** Checks the URLs of one repeatable action flag: http(s), at most MAX_ALARM_ACTIONS. */
function actionUrls(urls: readonly string[] | undefined, flag: string): string[] | undefined {
  if (urls === undefined || urls.length === 0) return undefined;
  if (urls.length > MAX_ALARM_ACTIONS) {
    throw usageError(`${flag} is given ${urls.length} times: an alarm takes at most ${MAX_ALARM_ACTIONS} URLs per state`);
  }
  return urls.map((url) => parseHttpUrl(url, flag, 'https://alerts.example/hook'));
}

/** Builds the body of `hearth alarm create` from its flags; throws a usage error on a bad value. */
export function buildAlarmCreate(name: string, flags: AlarmCreateFlags): AlarmCreate {
  if (!RESOURCE_NAME_PATTERN.test(name)) {
    throw usageError(`alarm name ${JSON.stringify(name)} is not valid`, "use 1-255 letters, digits, '_', '.', ':' or '-'");
  }
  const threshold = Number(flags.threshold);
  if (flags.threshold.trim() === '' || !Number.isFinite(threshold))
    throw usageError(`--threshold ${JSON.stringify(flags.threshold)} is not a number`);
  const body: AlarmCreate = {
    name,
    metric_name: flags.metric,
    statistic: parseChoice(flags.statistic, '--statistic', STATISTICS),
    period: wholeNumber(flags.period, '--period', MAX_ALARM_PERIOD),
    threshold,
    comparison_operator: parseChoice(flags.comparison, '--comparison', COMPARISONS),
  };
  if (flags.namespace !== undefined) body.namespace = flags.namespace;
  const dimensions = parseDimensions(flags.dimension);
  if (dimensions) body.dimensions = dimensions;
  if (flags.evaluationPeriods !== undefined)
    body.evaluation_periods = wholeNumber(flags.evaluationPeriods, '--evaluation-periods', MAX_EVALUATION_PERIODS);
  const alarmActions = actionUrls(flags.alarmAction, '--alarm-action');
  if (alarmActions) body.alarm_actions = alarmActions;
  const okActions = actionUrls(flags.okAction, '--ok-action');
  if (okActions) body.ok_actions = okActions;
  const insufficientDataActions = actionUrls(flags.insufficientDataAction, '--insufficient-data-action');
  if (insufficientDataActions) body.insufficient_data_actions = insufficientDataActions;
  if (flags.description !== undefined) body.description = flags.description;
  if (flags.disabled) body.enabled = false;
  if (flags.repeatActions) body.repeat_actions = true;
  return body;
}

const SYMBOLS: Record<string, string> = {
  GreaterThanThreshold: '>',
  GreaterThanOrEqualToThreshold: '>=',
  LessThanThreshold: '<',
  LessThanOrEqualToThreshold: '<=',
};

/** An alarm's rule in one line: `Average(system/linux/CPUUtilization) > 80 for 3 x 60 s`. */
export function alarmRule(alarm: Alarm): string {
  const dims = Object.entries(alarm.dimensions).map(([k, v]) => `${k}=${v}`);
  const metric = `${alarm.namespace}/${alarm.metric_name}${dims.length ? ` {${dims.join(', ')}}` : ''}`;
  const op = SYMBOLS[alarm.comparison_operator] ?? alarm.comparison_operator;
  return `${alarm.statistic}(${metric}) ${op} ${alarm.threshold} for ${alarm.evaluation_periods} x ${alarm.period} s`;
}

/** The `key: value` lines of an alarm. */
export function alarmFields(alarm: Alarm): Array<[string, unknown]> {
  return [
    ['name', alarm.name],
    ['id', alarm.id],
    ['state', alarm.state],
    ['state_reason', alarm.state_reason],
    ['state_updated_at', alarm.state_updated_at],
    ['rule', alarmRule(alarm)],
    ['enabled', alarm.enabled],
    ['repeat_actions', alarm.repeat_actions],
    ['alarm_actions', alarm.alarm_actions.join(' ') || '-'],
    ['ok_actions', alarm.ok_actions.join(' ') || '-'],
    ['insufficient_data_actions', alarm.insufficient_data_actions.join(' ') || '-'],
    ['deliveries', `${alarm.deliveries.delivered} delivered, ${alarm.deliveries.pending} pending, ${alarm.deliveries.failed} failed`],
    ['last_delivery_error', alarm.deliveries.last_error],
    ['last_evaluated_at', alarm.last_evaluated_at],
    ['description', alarm.description || '-'],
  ];
}

/** Registers `hearth alarm create|list|show|history|delete`. */
export function registerAlarmCommands(program: Command, deps: CliDeps): void {
  const alarm = program.command('alarm').description('threshold alarms over the metrics agents send (PutMetricData or hearth metrics put)');
  addExamples(alarm, ALARM_EXAMPLES);

  alarm
    .command('create')
    .description('create a threshold alarm; its actions are URLs POSTed an Aodh-shaped body on each state change')
    .argument('<name>', "alarm name: letters, digits, '_', '.', ':' or '-'")
    .requiredOption('--metric <name>', 'metric name, e.g. CPUUtilization')
    .option('--namespace <ns>', 'metric namespace (default system/linux, as cfn-push-stats sends)')
    .option('--dimension <name=value>', 'only samples with this dimension (repeatable)', collect)
    .requiredOption('--statistic <stat>', `one of ${STATISTICS.join(', ')}`)
    .requiredOption('--period <seconds>', 'seconds per period')
    .option('--evaluation-periods <n>', 'ALARM only when this many most recent periods all breach (default 1)')
    .requiredOption('--threshold <number>', 'the value compared with each period')
    .requiredOption('--comparison <operator>', `one of ${COMPARISONS.join(', ')}`)
    .option('--alarm-action <url>', 'URL POSTed on entering ALARM, e.g. a scaling policy alarm_url (repeatable)', collect)
    .option('--ok-action <url>', 'URL POSTed on entering OK (repeatable)', collect)
    .option('--insufficient-data-action <url>', 'URL POSTed on entering INSUFFICIENT_DATA (repeatable)', collect)
    .option('--description <text>', 'free text')
    .option('--disabled', 'create it without evaluating it')
    .option('--repeat-actions', "POST the current state's actions again once per period while it lasts (a sustained ALARM keeps scaling)")
    .action(async (name: string, flags: AlarmCreateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await session.client().createAlarm(buildAlarmCreate(name, flags));
      session.out.result({ alarm: created }, () => formatFields(alarmFields(created)));
    });

  alarm
    .command('list')
    .description('list alarms with their state')
    .action(async (_flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const alarms = await session.client().listAlarms();
      session.out.list<Alarm>(
        { alarms },
        [
          { header: 'name', value: (a) => a.name },
          { header: 'state', value: (a) => a.state },
          { header: 'since', value: (a) => a.state_updated_at },
          { header: 'rule', value: alarmRule },
        ],
        alarms,
        `no alarms in project ${session.options.project}`,
      );
    });

  alarm
    .command('show')
    .description('show one alarm: state, rule, actions and their deliveries')
    .argument('<name>', 'alarm name')
    .action(async (name: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const found = await session.client().getAlarm(name);
      session.out.result({ alarm: found }, () => formatFields(alarmFields(found)));
    });

  alarm
    .command('history')
    .description("an alarm's state changes, newest first")
    .argument('<name>', 'alarm name')
    .option('--limit <n>', 'at most this many (default 100)')
    .action(async (name: string, flags: { limit?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const limit = flags.limit === undefined ? undefined : parseLimit(flags.limit, '--limit');
      const history = await session.client().alarmHistory(name, limit);
      session.out.list<AlarmHistoryItem>(
        { history },
        [
          { header: 'time', value: (h) => h.time },
          { header: 'from', value: (h) => h.previous },
          { header: 'to', value: (h) => h.current },
          { header: 'reason', value: (h) => h.reason },
        ],
        history,
        `alarm ${name} has no state changes yet`,
      );
    });

  alarm
    .command('delete')
    .description('delete an alarm, its history and its undelivered actions')
    .argument('<name>', 'alarm name')
    .action(async (name: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      await session.client().deleteAlarm(name);
      session.out.result({ deleted: true, name }, () => `deleted alarm ${name}\n`);
    });
}
