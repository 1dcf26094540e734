import { sql, type Kysely, type Migration } from 'kysely';
import type { DialectName } from '../migrations.ts';

/** The name columns lists are ordered (and paged, `name > marker`) by. */
const ORDERED_NAMES = ['stacks', 'wait_conditions', 'scaling_groups', 'scaling_policies', 'alarms'];

/**
 * Migration 0006_byte_order_names: on PostgreSQL, names sort by their bytes (collation "C"), as
 * SQLite sorts them. With the database's collation (often en_US.UTF-8) the same stacks came back in
 * another order (`app db web1 Web_1 web-2` against SQLite's `Web_1 app db web-2 web1`), and a page
 * after a marker held other stacks. Equality is unchanged (both compare bytes), so no unique name
 * becomes a duplicate. Only the unique indexes on the names are rebuilt, not the tables.
 */
export function migration0006(dialect: DialectName): Migration {
  return {
    // Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async up(db: Kysely<any>) {
      if (dialect !== 'postgres') return; // SQLite's BINARY collation is byte order already
      for (const table of ORDERED_NAMES) {
        await sql`alter table ${sql.table(table)} alter column name type varchar(255) collate "C"`.execute(db);
      }
    },
  };
}
