import { type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';
import { hasColumn } from './columns.ts';

// Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

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
      if (await hasColumn(db, dialect, 'signals', 'body')) return;
      await db.schema.alterTable('signals').addColumn('body', 'text').execute();
    },
  };
}
