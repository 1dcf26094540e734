import type { Generated, Selectable } from 'kysely';

/** Tables of migration 0004_metrics_alarms (metric samples, alarms, alarm history, action deliveries, the evaluator lease), as Kysely sees them. */
export interface MetricsTables {
  metric_samples: MetricSamplesTable;
  alarms: AlarmsTable;
  alarm_history: AlarmHistoryTable;
  alarm_deliveries: AlarmDeliveriesTable;
  alarm_leases: AlarmLeasesTable;
}

export interface MetricSamplesTable {
  id: Generated<number>;
  project_id: string;
  /** The server whose credential sent the sample. */
  server_id: string | null;
  namespace: string;
  metric_name: string;
  unit: string | null;
  value: number;
  /** JSON object, keys sorted. */
  dimensions: string;
  time: string;
}

export interface AlarmsTable {
  id: string;
  project_id: string;
  name: string;
  description: string;
  namespace: string;
  metric_name: string;
  /** JSON object, keys sorted. */
  dimensions: string;
  statistic: string;
  period_s: number;
  evaluation_periods: number;
  threshold: number;
  comparison_operator: string;
  /** JSON arrays of URLs. */
  alarm_actions: string;
  ok_actions: string;
  insufficient_data_actions: string;
  /** 1 or 0. */
  enabled: number;
  /** 1: the actions of the current state are queued again once per period while it lasts; 0: on changes only. */
  repeat_actions: number;
  state: string;
  state_reason: string;
  state_updated_at: string;
  last_evaluated_at: string | null;
  /** When the actions of the current state were last queued (a change or a repeat); null before the first. */
  last_notified_at: string | null;
  created_at: string;
}

export interface AlarmHistoryTable {
  id: Generated<number>;
  alarm_id: string;
  time: string;
  previous_state: string;
  state: string;
  reason: string;
  /** JSON object. */
  data: string;
}

export interface AlarmDeliveriesTable {
  id: Generated<number>;
  alarm_id: string;
  url: string;
  /** The JSON body to POST. */
  body: string;
  /** pending | delivered | failed */
  status: string;
  attempts: number;
  next_attempt_at: string;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
}

export interface AlarmLeasesTable {
  name: string;
  /** Id of the process holding it ('' = nobody). */
  holder: string;
  expires_at: string;
  acquired_at: string | null;
}

export type MetricSampleRow = Selectable<MetricSamplesTable>;
export type AlarmRow = Selectable<AlarmsTable>;
export type AlarmHistoryRow = Selectable<AlarmHistoryTable>;
export type AlarmDeliveryRow = Selectable<AlarmDeliveriesTable>;
