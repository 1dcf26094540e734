import type { Kysely, Migration } from 'kysely';

/**
 * Migration 0010_events_pruned: per project, the highest event id the events retention deleted,
 * written in the transaction that deletes. A reader whose cursor is below it missed events and is
 * told so (ERR_EVENT_CURSOR_EXPIRED) instead of being handed the later ones as if nothing were
 * missing. Ids are global, so the gap below a project's oldest event cannot say this by itself.
 * Skipped where the table already is (a database whose migration records were rewound by hand).
 */
export const migration0010: Migration = {
  // Kysely's migration API takes Kysely<any>: the schema is what the migration is creating.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async up(db: Kysely<any>) {
    await db.schema
      .createTable('events_pruned')
      .ifNotExists()
      .addColumn('project_id', 'varchar(64)', (c) => c.primaryKey())
      .addColumn('through_id', 'bigint', (c) => c.notNull())
      .execute();
  },
};
