import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';

/** The lease row every hearth-server competes for; only its holder evaluates alarms and delivers their actions. */
export const ALARM_EVALUATOR_LEASE = 'alarm-evaluator';

/** The `expires_at` of a lease nobody holds: before any `now`, so the next process to ask takes it. */
export const LEASE_RELEASED = '1970-01-01T00:00:00.000Z';

/** Migration 0004_metrics_alarms: metric samples, alarms, alarm history, action deliveries, the evaluator lease. */
export function migration0004(dialect: DialectName): Migration {
  const serialKey = dialect === 'sqlite' ? sql`integer primary key autoincrement` : sql`bigserial primary key`;
  return {
    // Kysely's migration API takes Kysely<any>: the schema is what the migration is creating.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('metric_samples')
        .addColumn('id', serialKey)
        .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('server_id', 'varchar(64)')
        .addColumn('namespace', 'varchar(255)', (c) => c.notNull())
        .addColumn('metric_name', 'varchar(255)', (c) => c.notNull())
        .addColumn('unit', 'varchar(64)')
        .addColumn('value', 'double precision', (c) => c.notNull())
        .addColumn('dimensions', 'text', (c) => c.notNull())
        .addColumn('time', 'varchar(32)', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('metric_samples_metric')
        .on('metric_samples')
        .columns(['project_id', 'namespace', 'metric_name', 'time'])
        .execute();
      await db.schema.createIndex('metric_samples_time').on('metric_samples').column('time').execute();
      await db.schema
        .createTable('alarms')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('name', 'varchar(255)', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('namespace', 'varchar(255)', (c) => c.notNull())
        .addColumn('metric_name', 'varchar(255)', (c) => c.notNull())
        .addColumn('dimensions', 'text', (c) => c.notNull())
        .addColumn('statistic', 'varchar(16)', (c) => c.notNull())
        .addColumn('period_s', 'integer', (c) => c.notNull())
        .addColumn('evaluation_periods', 'integer', (c) => c.notNull())
        .addColumn('threshold', 'double precision', (c) => c.notNull())
        .addColumn('comparison_operator', 'varchar(32)', (c) => c.notNull())
        .addColumn('alarm_actions', 'text', (c) => c.notNull())
        .addColumn('ok_actions', 'text', (c) => c.notNull())
        .addColumn('insufficient_data_actions', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('state', 'varchar(20)', (c) => c.notNull())
        .addColumn('state_reason', 'text', (c) => c.notNull())
        .addColumn('state_updated_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('last_evaluated_at', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addUniqueConstraint('alarms_project_name', ['project_id', 'name'])
        .execute();
      await db.schema
        .createTable('alarm_history')
        .addColumn('id', serialKey)
        .addColumn('alarm_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('time', 'varchar(32)', (c) => c.notNull())
        .addColumn('previous_state', 'varchar(20)', (c) => c.notNull())
        .addColumn('state', 'varchar(20)', (c) => c.notNull())
        .addColumn('reason', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('alarm_history_alarm').on('alarm_history').columns(['alarm_id', 'id']).execute();
      // The outbox of action deliveries: written in the transaction of the state change, POSTed after.
      await db.schema
        .createTable('alarm_deliveries')
        .addColumn('id', serialKey)
        .addColumn('alarm_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('url', 'text', (c) => c.notNull())
        .addColumn('body', 'text', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('last_error', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('delivered_at', 'varchar(32)')
        .execute();
      await db.schema.createIndex('alarm_deliveries_status').on('alarm_deliveries').columns(['status', 'id']).execute();
      await db.schema.createIndex('alarm_deliveries_alarm').on('alarm_deliveries').columns(['alarm_id', 'status']).execute();
      await db.schema
        .createTable('alarm_leases')
        .addColumn('name', 'varchar(64)', (c) => c.primaryKey())
        .addColumn('holder', 'varchar(128)', (c) => c.notNull())
        .addColumn('expires_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('acquired_at', 'varchar(32)')
        .execute();
      // The row exists from the start, so taking the lease is always an UPDATE (never a racing INSERT).
      await db
        .insertInto('alarm_leases')
        .values({ name: ALARM_EVALUATOR_LEASE, holder: '', expires_at: LEASE_RELEASED, acquired_at: null })
        .execute();
    },
  };
}
