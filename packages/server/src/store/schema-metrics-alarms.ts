/** Tables of migration 0004_metrics_alarms (metric samples, alarms, alarm history, the evaluator lease), as Kysely sees them. */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface MetricsTables {}
