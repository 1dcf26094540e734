import { Type, type Static } from 'typebox';
import { JsonObject, Timestamp } from './common.ts';

/** Statistics an alarm can take over one period's samples (CloudWatch's names). */
export const METRIC_STATISTICS = ['SampleCount', 'Average', 'Sum', 'Minimum', 'Maximum'] as const;
export type MetricStatistic = (typeof METRIC_STATISTICS)[number];

/** How an alarm compares a period's statistic with its threshold (CloudWatch's names). */
export const COMPARISON_OPERATORS = [
  'GreaterThanThreshold',
  'GreaterThanOrEqualToThreshold',
  'LessThanThreshold',
  'LessThanOrEqualToThreshold',
] as const;
export type ComparisonOperator = (typeof COMPARISON_OPERATORS)[number];

/** An alarm's states (CloudWatch's names). */
export const ALARM_STATES = ['OK', 'ALARM', 'INSUFFICIENT_DATA'] as const;
export type AlarmState = (typeof ALARM_STATES)[number];

/** Namespace of a sample that names none (cfn-push-stats' default). */
export const DEFAULT_METRIC_NAMESPACE = 'system/linux';
/** Most dimensions on one sample or alarm (CloudWatch's limit since 2022; cfn-push-stats sends every Nova meta tag as one). */
export const MAX_METRIC_DIMENSIONS = 30;
/** Most samples in one put (native or PutMetricData). */
export const MAX_SAMPLES_PER_PUT = 100;
/** Most action URLs per state. */
export const MAX_ALARM_ACTIONS = 5;

/**
 * Most characters in a namespace or metric name (each stored in a varchar(255) column), and in a
 * dimension name or value (held to the same cap, so an alarm can name whatever a sample carries).
 * PutMetricData (cfn-push-stats) is held to the same caps as the JSON routes.
 */
export const MAX_METRIC_NAME_LENGTH = 255;
/** Most characters in a unit (`Percent`, `Bytes/Second`; stored in a varchar(64) column). */
export const MAX_METRIC_UNIT_LENGTH = 64;

/**
 * Printable text: no C0/C1 control character or DEL. Names are free text as in CloudWatch, where
 * cfn-push-stats --metric sends whatever it is given ("Disk Free"): a narrower pattern let
 * PutMetricData store names the native routes could then neither list nor alarm on.
 */
const PRINTABLE = '^[^\\u0000-\\u001F\\u007F-\\u009F]+$';
/** A namespace: `system/linux`, `AWS/ELB`, `My App`. */
export const MetricNamespace = Type.String({ minLength: 1, maxLength: MAX_METRIC_NAME_LENGTH, pattern: PRINTABLE });
/** A metric name: `CPUUtilization`, `Heartbeat`, `Disk Free`. */
export const MetricName = Type.String({ minLength: 1, maxLength: MAX_METRIC_NAME_LENGTH, pattern: PRINTABLE });
const DimensionText = { minLength: 1, maxLength: MAX_METRIC_NAME_LENGTH };
/**
 * Dimensions: name → value, for example `{"InstanceId": "i-1", "AutoScalingGroupName": "web"}`.
 * A Record's key schema does not constrain the names, so `propertyNames` does.
 */
export const MetricDimensions = Type.Record(Type.String(DimensionText), Type.String(DimensionText), {
  maxProperties: MAX_METRIC_DIMENSIONS,
  propertyNames: DimensionText,
});
export type MetricDimensions = Static<typeof MetricDimensions>;

/** One sample as an agent sends it. */
export const MetricSampleInput = Type.Object(
  {
    metric_name: MetricName,
    value: Type.Number(),
    /** Default: the put's namespace. */
    namespace: Type.Optional(MetricNamespace),
    /** CloudWatch unit (`Percent`, `Bytes`, `Count`, ...), kept as given. */
    unit: Type.Optional(Type.String({ maxLength: MAX_METRIC_UNIT_LENGTH })),
    dimensions: Type.Optional(MetricDimensions),
    /** When it was measured; default: when the server received it. At most 2 weeks old, 2 hours ahead. */
    timestamp: Type.Optional(Timestamp),
  },
  { additionalProperties: false },
);
export type MetricSampleInput = Static<typeof MetricSampleInput>;

/** POST /v1/guest/metrics with the agent credential: samples, attributed to the agent's server. */
export const MetricPut = Type.Object(
  {
    /** Default namespace of the samples; default `system/linux`. */
    namespace: Type.Optional(MetricNamespace),
    samples: Type.Array(MetricSampleInput, { minItems: 1, maxItems: MAX_SAMPLES_PER_PUT }),
  },
  { additionalProperties: false },
);
export type MetricPut = Static<typeof MetricPut>;

/** The answer to a put: how many samples were stored. */
export const MetricPutResult = Type.Object({ stored: Type.Integer() });
export type MetricPutResult = Static<typeof MetricPutResult>;

/** One stored sample. */
export const MetricSample = Type.Object({
  namespace: Type.String(),
  metric_name: Type.String(),
  value: Type.Number(),
  unit: Type.Union([Type.String(), Type.Null()]),
  dimensions: MetricDimensions,
  /** The server whose credential sent it. */
  server_id: Type.Union([Type.String(), Type.Null()]),
  time: Timestamp,
});
export type MetricSample = Static<typeof MetricSample>;

/** GET /v1/{project}/metrics: newest first. */
export const MetricListQuery = Type.Object(
  {
    namespace: Type.Optional(MetricNamespace),
    metric_name: Type.Optional(MetricName),
    server_id: Type.Optional(Type.String({ maxLength: 64 })),
    /** Only samples at or after this time. */
    since: Type.Optional(Timestamp),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  },
  { additionalProperties: false },
);
export type MetricListQuery = Static<typeof MetricListQuery>;

/** An action: an http(s) URL POSTed an Aodh-shaped body on a state change (a scaling policy's `alarm_url` works). */
export const AlarmActionUrl = Type.String({ minLength: 8, maxLength: 2048, pattern: '^https?://' });
const Actions = Type.Array(AlarmActionUrl, { maxItems: MAX_ALARM_ACTIONS });

/** Longest period, in seconds (one day). */
export const MAX_ALARM_PERIOD = 86400;
/** Most periods an alarm looks back over. */
export const MAX_EVALUATION_PERIODS = 100;

/** POST /v1/{project}/alarms: a threshold alarm over one metric. */
export const AlarmCreate = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_.:-]+$' }),
    description: Type.Optional(Type.String({ maxLength: 1024 })),
    namespace: Type.Optional(MetricNamespace),
    metric_name: MetricName,
    /** Samples match when they carry every one of these (and maybe more); none = every sample of the metric. */
    dimensions: Type.Optional(MetricDimensions),
    statistic: Type.Union([
      Type.Literal('SampleCount'),
      Type.Literal('Average'),
      Type.Literal('Sum'),
      Type.Literal('Minimum'),
      Type.Literal('Maximum'),
    ]),
    /** Seconds per period. */
    period: Type.Integer({ minimum: 1, maximum: MAX_ALARM_PERIOD }),
    /** ALARM only when this many most recent periods all breach; default 1. */
    evaluation_periods: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EVALUATION_PERIODS })),
    threshold: Type.Number(),
    comparison_operator: Type.Union([
      Type.Literal('GreaterThanThreshold'),
      Type.Literal('GreaterThanOrEqualToThreshold'),
      Type.Literal('LessThanThreshold'),
      Type.Literal('LessThanOrEqualToThreshold'),
    ]),
    alarm_actions: Type.Optional(Actions),
    ok_actions: Type.Optional(Actions),
    insufficient_data_actions: Type.Optional(Actions),
    /** A disabled alarm is not evaluated; default true. */
    enabled: Type.Optional(Type.Boolean()),
    /**
     * Queue the actions of the current state again once per period while it lasts (Aodh's
     * `repeat_actions`): a sustained ALARM keeps signalling its scaling policy. Default false: on
     * state changes only.
     */
    repeat_actions: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type AlarmCreate = Static<typeof AlarmCreate>;

/** How the actions of an alarm are being delivered. */
export const AlarmDeliveries = Type.Object({
  pending: Type.Integer(),
  failed: Type.Integer(),
  delivered: Type.Integer(),
  last_error: Type.Union([Type.String(), Type.Null()]),
});
export type AlarmDeliveries = Static<typeof AlarmDeliveries>;

/** An alarm as the API shows it. */
export const Alarm = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  namespace: Type.String(),
  metric_name: Type.String(),
  dimensions: MetricDimensions,
  statistic: Type.String(),
  period: Type.Integer(),
  evaluation_periods: Type.Integer(),
  threshold: Type.Number(),
  comparison_operator: Type.String(),
  alarm_actions: Type.Array(Type.String()),
  ok_actions: Type.Array(Type.String()),
  insufficient_data_actions: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  repeat_actions: Type.Boolean(),
  state: Type.Union([Type.Literal('OK'), Type.Literal('ALARM'), Type.Literal('INSUFFICIENT_DATA')]),
  state_reason: Type.String(),
  state_updated_at: Timestamp,
  last_evaluated_at: Type.Union([Timestamp, Type.Null()]),
  created_at: Timestamp,
  deliveries: AlarmDeliveries,
});
export type Alarm = Static<typeof Alarm>;

/** One state change of an alarm. */
export const AlarmHistoryItem = Type.Object({
  time: Timestamp,
  previous: Type.String(),
  current: Type.String(),
  reason: Type.String(),
  /** The datapoints the decision was taken on (`{period_start: value | null}`), the threshold and statistic. */
  data: JsonObject,
});
export type AlarmHistoryItem = Static<typeof AlarmHistoryItem>;

/**
 * The body POSTed to an action URL: Aodh's notifier shape, so a scaling policy's `alarm_url` (or
 * anything written for Aodh) takes it unchanged. States are Aodh's: `ok`, `alarm`, `insufficient data`.
 */
export const AlarmNotification = Type.Object({
  alarm_name: Type.String(),
  alarm_id: Type.String(),
  severity: Type.String(),
  previous: Type.String(),
  current: Type.String(),
  reason: Type.String(),
  reason_data: JsonObject,
});
export type AlarmNotification = Static<typeof AlarmNotification>;

/** Aodh's spelling of a state. */
export function aodhState(state: AlarmState): string {
  return state === 'INSUFFICIENT_DATA' ? 'insufficient data' : state.toLowerCase();
}
