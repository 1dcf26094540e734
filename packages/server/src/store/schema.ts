import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { ScalingTables } from './schema-scaling.ts';
import type { MetricsTables } from './schema-metrics-alarms.ts';

/**
 * Tables as Kysely sees them. JSON is kept as text and timestamps as ISO-8601 text with
 * milliseconds (`2026-01-01T00:00:00.000Z`), so SQLite and PostgreSQL return the same shapes.
 */
export interface Database extends ScalingTables, MetricsTables {
  projects: ProjectsTable;
  servers: ServersTable;
  software_configs: SoftwareConfigsTable;
  software_deployments: SoftwareDeploymentsTable;
  signals: SignalsTable;
  events: EventsTable;
  events_pruned: EventsPrunedTable;
  stacks: StacksTable;
  wait_conditions: WaitConditionsTable;
  wait_condition_signals: WaitConditionSignalsTable;
  resource_credentials: ResourceCredentialsTable;
}

export interface ProjectsTable {
  id: string;
  name: string;
  created_at: string;
}

export interface ServersTable {
  id: string;
  project_id: string;
  name: string;
  access_key_id: string;
  created_at: string;
  last_seen_at: string | null;
  config_transport: ColumnType<string, string | undefined, string>;
  stack_id: string | null;
  stack_name: string | null;
  resource_name: string | null;
}

export interface SoftwareConfigsTable {
  id: string;
  project_id: string;
  name: string | null;
  group_name: string;
  config: string | null;
  inputs: string;
  outputs: string;
  options: string;
  created_at: string;
}

export interface SoftwareDeploymentsTable {
  id: string;
  project_id: string;
  server_id: string;
  config_id: string;
  derived_config_id: string;
  derived_at: string;
  name: string | null;
  action: string;
  status: string;
  status_reason: string | null;
  input_values: string;
  output_values: string | null;
  signal_transport: string;
  timeout_s: number;
  deadline_at: string | null;
  fetched_at: string | null;
  last_heartbeat_at: string | null;
  created_at: string;
  updated_at: string | null;
  stack_id: string | null;
  stack_name: string | null;
  resource_name: string | null;
  /**
   * Credential of this deployment alone (CFN_SIGNAL, HEAT_SIGNAL, TEMP_URL_SIGNAL; a HEARTH_SIGNAL one
   * attached again after its server's delete, whose `?token=` URL it then binds). A key with no live
   * credential marks a deployment its server's delete detached (the others get the deleted server's own
   * key): it is in no metadata document until a new action (see domain/server-deployments.ts, ATTACHED).
   */
  access_key_id: string | null;
}

/** Keyed by `deployment_id, idempotency_key` (PostgreSQL's table also has a serial `id` that nothing reads; see 0013). */
export interface SignalsTable {
  deployment_id: string;
  derived_config_id: string;
  idempotency_key: string;
  result_status: string;
  result_reason: string | null;
  received_at: string;
}

export interface EventsTable {
  id: Generated<number>;
  project_id: string;
  time: string;
  type: string;
  resource_type: string;
  resource_id: string;
  server_id: string | null;
  message: string;
  data: ColumnType<string, string, string>;
}

/** Per project, the highest event id the events retention deleted (migration 0010). */
export interface EventsPrunedTable {
  project_id: string;
  /** bigint: PostgreSQL returns it as a string. */
  through_id: ColumnType<number | string, number, number>;
}

export interface StacksTable {
  id: string;
  project_id: string;
  name: string;
  created_at: string;
}

export interface WaitConditionsTable {
  id: string;
  project_id: string;
  stack_id: string;
  name: string;
  count: number;
  timeout_s: number;
  max_failures: number | null;
  min_success_percent: number | null;
  status: string;
  status_reason: string | null;
  deadline_at: string;
  access_key_id: string;
  urls_expire_at: string | null;
  /** Bumped on every change; the ETag of the long-poll. */
  generation: number;
  created_at: string;
  updated_at: string | null;
}

export interface WaitConditionSignalsTable {
  wait_condition_id: string;
  signal_id: string;
  status: string;
  reason: string | null;
  data: string;
  received_at: string;
}

export interface ResourceCredentialsTable {
  access_key_id: string;
  project_id: string;
  kind: 'deployment' | 'wait_condition' | 'scaling_policy';
  target_id: string;
  created_at: string;
}

export type ServerRow = Selectable<ServersTable>;
export type ConfigRow = Selectable<SoftwareConfigsTable>;
export type DeploymentRow = Selectable<SoftwareDeploymentsTable>;
export type EventRow = Selectable<EventsTable>;
export type NewEvent = Insertable<EventsTable>;
export type StackRow = Selectable<StacksTable>;
export type WaitConditionRow = Selectable<WaitConditionsTable>;
export type WaitConditionSignalRow = Selectable<WaitConditionSignalsTable>;
