import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';

/** Migration 0003_scaling: scaling groups, members, policies, actuator deliveries. */
export function migration0003(dialect: DialectName): Migration {
  const serialKey = dialect === 'sqlite' ? sql`integer primary key autoincrement` : sql`bigserial primary key`;
  return {
    // Kysely's migration API takes Kysely<any>: the schema is what the migration is creating.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('scaling_groups')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('stack_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('name', 'varchar(255)', (c) => c.notNull())
        .addColumn('min_size', 'integer', (c) => c.notNull())
        .addColumn('max_size', 'integer', (c) => c.notNull())
        .addColumn('desired_capacity', 'integer', (c) => c.notNull())
        .addColumn('cooldown_s', 'integer', (c) => c.notNull())
        .addColumn('cooldown_end_at', 'varchar(32)')
        .addColumn('cooldown_reason', 'text')
        // The "scaling in progress" flag as a lease: a crash leaves it to expire, never set for ever.
        .addColumn('scaling_lease_id', 'varchar(36)')
        .addColumn('scaling_lease_until', 'varchar(32)')
        .addColumn('last_activity_at', 'varchar(32)')
        .addColumn('last_activity_reason', 'text')
        .addColumn('actuator_url', 'text', (c) => c.notNull())
        // AES-256-GCM under a key derived from the master key, never the secret in clear.
        .addColumn('actuator_secret_sealed', 'text', (c) => c.notNull())
        .addColumn('member_bootstrap', 'text')
        .addColumn('next_sequence', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('updated_at', 'varchar(32)')
        .addUniqueConstraint('scaling_groups_stack_name', ['stack_id', 'name'])
        .execute();
      await db.schema
        .createTable('scaling_members')
        .addColumn('group_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('server_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('bootstrap', 'integer', (c) => c.notNull())
        .addColumn('added_at', 'varchar(32)', (c) => c.notNull())
        .addPrimaryKeyConstraint('scaling_members_pk', ['group_id', 'server_id'])
        .execute();
      await db.schema
        .createTable('scaling_policies')
        .addColumn('id', 'varchar(36)', (c) => c.primaryKey())
        .addColumn('project_id', 'varchar(64)', (c) => c.notNull())
        .addColumn('stack_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('group_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('name', 'varchar(255)', (c) => c.notNull())
        .addColumn('adjustment_type', 'varchar(32)', (c) => c.notNull())
        .addColumn('scaling_adjustment', 'integer', (c) => c.notNull())
        .addColumn('min_adjustment_step', 'integer')
        .addColumn('cooldown_s', 'integer')
        .addColumn('act_only_on_alarm', 'integer', (c) => c.notNull())
        // Null once revoked: the alarm URL and signal token then stop working.
        .addColumn('access_key_id', 'varchar(64)')
        .addColumn('key_issued_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('urls_expire_at', 'varchar(32)')
        .addColumn('last_signal_at', 'varchar(32)')
        .addColumn('last_signal_outcome', 'varchar(16)')
        .addColumn('last_signal_reason', 'text')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addUniqueConstraint('scaling_policies_stack_name', ['stack_id', 'name'])
        .execute();
      await db.schema.createIndex('scaling_policies_group').on('scaling_policies').column('group_id').execute();
      // The durable actuator outbox: one row per change, delivered in sequence order per group.
      await db.schema
        .createTable('actuator_deliveries')
        .addColumn('id', serialKey)
        .addColumn('delivery_id', 'varchar(36)', (c) => c.notNull().unique())
        .addColumn('group_id', 'varchar(36)', (c) => c.notNull())
        .addColumn('sequence', 'integer', (c) => c.notNull())
        .addColumn('payload', 'text', (c) => c.notNull())
        .addColumn('status', 'varchar(16)', (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull())
        .addColumn('next_attempt_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('last_error', 'text')
        // Set while one deliverer POSTs it, so replicas sharing a database never send it twice at once.
        .addColumn('claimed_until', 'varchar(32)')
        .addColumn('created_at', 'varchar(32)', (c) => c.notNull())
        .addColumn('delivered_at', 'varchar(32)')
        .addUniqueConstraint('actuator_deliveries_sequence', ['group_id', 'sequence'])
        .execute();
      await db.schema.createIndex('actuator_deliveries_due').on('actuator_deliveries').columns(['status', 'next_attempt_at']).execute();
    },
  };
}
