import { type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';
import { hasColumn } from './columns.ts';

// Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * Migration 0011_scaling_undelivered_members: a member_bootstrap member remembers, until a delivery
 * carrying its credential gets a 2xx, the sequence of the change that added it, so that a delivery
 * that fails for good does not leave it forgotten with a live credential (the next delivery that
 * succeeds carries it; a scale-down removes it first). Members in the payload of a delivery still
 * pending or failed for good are marked from it; a failed row already pruned (7 days) leaves its
 * members as delivered, as they were taken to be before. Skipped where the column already
 * is (a database whose migration records were rewound by hand).
 */
export function migration0011(dialect: DialectName): Migration {
  return {
    async up(db: AnyDb) {
      // Where it is, its marks are kept: a member a later delivery carried is not marked again.
      if (await hasColumn(db, dialect, 'scaling_members', 'undelivered_sequence')) return;
      await db.schema.alterTable('scaling_members').addColumn('undelivered_sequence', 'integer').execute();
      const rows = (await db
        .selectFrom('actuator_deliveries')
        .select(['group_id', 'sequence', 'payload'])
        .where('status', 'in', ['pending', 'failed'])
        .orderBy('group_id')
        .orderBy('sequence', 'desc')
        .execute()) as Array<{ group_id: string; sequence: number; payload: string }>;
      // Highest sequence first, each member overwritten by every lower one: it keeps the change that added it.
      for (const row of rows) {
        const ids = (JSON.parse(row.payload) as { new_members?: Array<{ server_id: string }> }).new_members?.map((m) => m.server_id) ?? [];
        if (ids.length === 0) continue;
        await db
          .updateTable('scaling_members')
          .set({ undelivered_sequence: row.sequence })
          .where('group_id', '=', row.group_id)
          .where('server_id', 'in', ids)
          .where('bootstrap', '=', 1)
          .execute();
      }
    },
  };
}
