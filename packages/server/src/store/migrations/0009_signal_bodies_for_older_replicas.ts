import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';

// Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

async function hasBody(db: AnyDb, dialect: DialectName): Promise<boolean> {
  const found =
    dialect === 'sqlite'
      ? await sql`select 1 from pragma_table_info('signals') where name = 'body'`.execute(db)
      : await sql`select 1 from information_schema.columns
          where table_schema = current_schema() and table_name = 'signals' and column_name = 'body'`.execute(db);
  return found.rows.length > 0;
}

/**
 * Migration 0009_signal_bodies_for_older_replicas: `signals.body` is back, nullable and never
 * written by this release. 0005 dropped it, but a release before 0005 still inserts it: in a rolling
 * upgrade (the first new replica migrates at start, or `hearth-server migrate` runs before the
 * rollout) every deployment signal that reached a replica not yet replaced failed with a 500
 * (`column "body" of relation "signals" does not exist`) until it was. Those replicas store their
 * bodies here meanwhile; rows of this release keep null, which costs no page. Skipped where the
 * column already is (a database migrated by hand).
 */
export function migration0009(dialect: DialectName): Migration {
  return {
    async up(db: AnyDb) {
      if (await hasBody(db, dialect)) return;
      await db.schema.alterTable('signals').addColumn('body', 'text').execute();
    },
  };
}
