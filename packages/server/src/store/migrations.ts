import { sql, type Kysely, type Migration } from 'kysely';
import { migration0003 } from './migrations/0003_scaling.ts';
import { migration0004 } from './migrations/0004_metrics_alarms.ts';
import { migration0005 } from './migrations/0005_signal_bodies.ts';
import { migration0006 } from './migrations/0006_byte_order_names.ts';
import { migration0007 } from './migrations/0007_nul_free_text.ts';
import { migration0008 } from './migrations/0008_alarm_repeat_actions.ts';
import { migration0009 } from './migrations/0009_signal_bodies_for_older_replicas.ts';
import { migration0010 } from './migrations/0010_events_pruned.ts';
import { migration0011 } from './migrations/0011_scaling_undelivered_members.ts';
import { migration0012 } from './migrations/0012_list_order_indexes.ts';
import { migration0013 } from './migrations/0013_signals_keyed.ts';

/** The SQL dialects the store runs on. */
export type DialectName = 'sqlite' | 'postgres';

/** Auto-incrementing integer primary key, per dialect. */
function serialKey(dialect: DialectName) {
  return dialect === 'sqlite' ? sql`integer primary key autoincrement` : sql`bigserial primary key`;
}

/** Every migration, in order. Names sort; never edit one that has shipped: add a new one. */
export function migrations(dialect: DialectName): Record<string, Migration> {
  return {
    '0001_core': {
      // Kysely's migration API takes Kysely<any>: the schema is what the migration is creating.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('projects')
          .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
          .addColumn('name', 'varchar(255)', (c) => c.notNull())
          .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
          .execute();
        await db.schema
          .createTable('servers')
          .addColumn('id', 'varchar(64)', (c) => c.primaryKey())
          .addColumn('project_id', 'varchar(64)', (c) => c.notNull().references('projects.id'))
          .addColumn('name', 'varchar(255)', (c) => c.notNull())
          .addColumn('access_key_id', 'varchar(64)', (c) => c.notNull().unique())
          .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
          .addColumn('last_seen_at', 'varchar(32)')
          .execute();
        await db.schema.createIndex('servers_project').on('servers').columns(['project_id', 'id']).execute();
        await db.schema
          .createTable('software_configs')
          .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
          .addColumn('project_id', 'varchar(64)', (c) => c.notNull().references('projects.id'))
          .addColumn('name', 'varchar(255)')
          .addColumn('group_name', 'varchar(255)', (c) => c.notNull())
          .addColumn('config', 'text')
          .addColumn('inputs', 'text', (c) => c.notNull())
          .addColumn('outputs', 'text', (c) => c.notNull())
          .addColumn('options', 'text', (c) => c.notNull())
          .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('configs_project').on('software_configs').columns(['project_id', 'created_at', 'id']).execute();
        await db.schema
          .createTable('software_deployments')
          .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
          .addColumn('project_id', 'varchar(64)', (c) => c.notNull().references('projects.id'))
          .addColumn('server_id', 'varchar(64)', (c) => c.notNull())
          .addColumn('config_id', 'varchar(36)', (c) => c.notNull().references('software_configs.id'))
          .addColumn('derived_config_id', 'varchar(36)', (c) => c.notNull())
          .addColumn('derived_at', 'varchar(32)', (c) => c.notNull())
          .addColumn('name', 'varchar(255)')
          .addColumn('action', 'varchar(16)', (c) => c.notNull())
          .addColumn('status', 'varchar(16)', (c) => c.notNull())
          .addColumn('status_reason', 'text')
          .addColumn('input_values', 'text', (c) => c.notNull())
          .addColumn('output_values', 'text')
          .addColumn('signal_transport', 'varchar(32)', (c) => c.notNull())
          .addColumn('timeout_s', 'integer', (c) => c.notNull())
          .addColumn('deadline_at', 'varchar(32)')
          .addColumn('fetched_at', 'varchar(32)')
          .addColumn('last_heartbeat_at', 'varchar(32)')
          .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
          .addColumn('updated_at', 'varchar(32)')
          .execute();
        await db.schema.createIndex('deployments_server').on('software_deployments').columns(['project_id', 'server_id']).execute();
        await db.schema.createIndex('deployments_config').on('software_deployments').column('config_id').execute();
        await db.schema.createIndex('deployments_deadline').on('software_deployments').columns(['status', 'deadline_at']).execute();
        await db.schema
          .createTable('signals')
          .addColumn('id', serialKey(dialect))
          .addColumn('deployment_id', 'varchar(36)', (c) => c.notNull())
          .addColumn('derived_config_id', 'varchar(36)', (c) => c.notNull())
          .addColumn('idempotency_key', 'varchar(128)', (c) => c.notNull())
          .addColumn('body', 'text', (c) => c.notNull())
          .addColumn('result_status', 'varchar(16)', (c) => c.notNull())
          .addColumn('result_reason', 'text')
          .addColumn('received_at', 'varchar(32)', (c) => c.notNull())
          .addUniqueConstraint('signals_idempotency', ['deployment_id', 'idempotency_key'])
          .execute();
        await db.schema
          .createTable('events')
          .addColumn('id', serialKey(dialect))
          .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
          .addColumn('time', 'varchar(32)', (c) => c.notNull())
          .addColumn('type', 'varchar(64)', (c) => c.notNull())
          .addColumn('resource_type', 'varchar(64)', (c) => c.notNull())
          .addColumn('resource_id', 'varchar(64)', (c) => c.notNull())
          .addColumn('server_id', 'varchar(64)')
          .addColumn('message', 'text', (c) => c.notNull())
          .addColumn('data', 'text', (c) => c.notNull())
          .execute();
        await db.schema.createIndex('events_project').on('events').columns(['project_id', 'id']).execute();
        await db.schema.createIndex('events_resource').on('events').columns(['resource_id', 'id']).execute();
      },
    },
    '0002_stacks_and_wait_conditions': {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        await db.schema
          .createTable('stacks')
          .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
          .addColumn('project_id', 'varchar(64)', (c) => c.notNull().references('projects.id'))
          .addColumn('name', 'varchar(255)', (c) => c.notNull())
          .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
          .addUniqueConstraint('stacks_project_name', ['project_id', 'name'])
          .execute();
        // Where a server or deployment sits: a real stack, or (stack_id null) its own pseudo-stack.
        for (const table of ['servers', 'software_deployments']) {
          await db.schema.alterTable(table).addColumn('stack_id', 'varchar(36)').execute();
          await db.schema.alterTable(table).addColumn('stack_name', 'varchar(255)').execute();
          await db.schema.alterTable(table).addColumn('resource_name', 'varchar(255)').execute();
        }
        await db.schema
          .alterTable('servers')
          .addColumn('config_transport', 'varchar(32)', (c) => c.notNull().defaultTo('HEARTH_LONG_POLL'))
          .execute();
        await db.schema.alterTable('software_deployments').addColumn('access_key_id', 'varchar(64)').execute();
        await db.schema
          .createTable('wait_conditions')
          .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
          .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
          .addColumn('stack_id', 'varchar(36)', (c) => c.notNull().references('stacks.id'))
          .addColumn('name', 'varchar(255)', (c) => c.notNull())
          .addColumn('count', 'integer', (c) => c.notNull())
          .addColumn('timeout_s', 'integer', (c) => c.notNull())
          .addColumn('max_failures', 'integer')
          .addColumn('min_success_percent', 'integer')
          .addColumn('status', 'varchar(16)', (c) => c.notNull())
          .addColumn('status_reason', 'text')
          .addColumn('deadline_at', 'varchar(32)', (c) => c.notNull())
          .addColumn('access_key_id', 'varchar(64)', (c) => c.notNull())
          .addColumn('urls_expire_at', 'varchar(32)')
          .addColumn('generation', 'integer', (c) => c.notNull())
          .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
          .addColumn('updated_at', 'varchar(32)')
          .addUniqueConstraint('wait_conditions_stack_name', ['stack_id', 'name'])
          .execute();
        await db.schema.createIndex('wait_conditions_deadline').on('wait_conditions').columns(['status', 'deadline_at']).execute();
        await db.schema
          .createTable('wait_condition_signals')
          .addColumn('wait_condition_id', 'varchar(36)', (c) => c.notNull())
          .addColumn('signal_id', 'varchar(255)', (c) => c.notNull())
          .addColumn('status', 'varchar(16)', (c) => c.notNull())
          .addColumn('reason', 'text')
          .addColumn('data', 'text', (c) => c.notNull())
          .addColumn('received_at', 'varchar(32)', (c) => c.notNull())
          .addPrimaryKeyConstraint('wait_condition_signals_pk', ['wait_condition_id', 'signal_id'])
          .execute();
        // Credentials issued to one resource other than a server (deployments, wait conditions):
        // the access key finds the one thing it may reach. The secret is derived, never stored.
        await db.schema
          .createTable('resource_credentials')
          .addColumn('access_key_id', 'varchar(64)', (c) => c.primaryKey())
          .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
          .addColumn('kind', 'varchar(32)', (c) => c.notNull())
          .addColumn('target_id', 'varchar(64)', (c) => c.notNull())
          .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
          .execute();
      },
    },
    '0003_scaling': migration0003(dialect),
    '0004_metrics_alarms': migration0004(dialect),
    '0005_signal_bodies': migration0005,
    '0006_byte_order_names': migration0006(dialect),
    '0007_nul_free_text': migration0007(dialect),
    '0008_alarm_repeat_actions': migration0008,
    '0009_signal_bodies_for_older_replicas': migration0009(dialect),
    '0010_events_pruned': migration0010,
    '0011_scaling_undelivered_members': migration0011(dialect),
    '0012_list_order_indexes': migration0012,
    '0013_signals_keyed': migration0013(dialect),
  };
}
