import { sql, type Kysely, type Migration } from 'kysely';
import { storableText } from '../../domain/text.ts';
import type { DialectName } from '../migrations.ts';

// Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/**
 * The tables hearth made (not SQLite's own, not the migrator's) that have rowids. The one without
 * (`signals`, since 0013) is made after this migration has run and the store refuses NULs, so it holds
 * none; it is met here only when the migration records were rewound past 0007 by hand.
 */
async function tables(db: AnyDb): Promise<string[]> {
  const rows = await sql<{ name: string; sql: string }>`
    select name, sql from sqlite_master
    where type = 'table' and name not glob 'sqlite_*' and name not glob 'kysely_*'
    order by name`.execute(db);
  return rows.rows.filter((row) => !/\bwithout\s+rowid\b/i.test(row.sql)).map((row) => row.name);
}

async function columns(db: AnyDb, table: string): Promise<string[]> {
  const rows = await sql<{ name: string }>`select name from pragma_table_info(${table})`.execute(db);
  return rows.rows.map((row) => row.name);
}

/**
 * Migration 0007_nul_free_text: on SQLite, every stored text value with a NUL character is rewritten
 * the way hearth writes such text today (storableText: each NUL becomes the six characters `\u0000`).
 * Before the store refused NULs (text-guard.ts), SQLite stored them in operator text (server, config
 * and deployment names, status reasons, alarm descriptions) and in event messages quoting it. The
 * guard also refuses a NUL copied from such a row into a write, so those rows could no longer be
 * changed or deleted: deleting the server writes an event that quotes its name, a 400 forever.
 * PostgreSQL never stored a NUL in text, so there is nothing to do there. Rows are found by value
 * (`typeof = 'text'`, so blobs are left alone) and rewritten by rowid, so no NUL goes into a
 * statement; values stored as JSON hold none (JSON.stringify escapes it). Idempotent.
 */
export function migration0007(dialect: DialectName): Migration {
  return {
    async up(db: AnyDb) {
      if (dialect !== 'sqlite') return;
      for (const table of await tables(db)) {
        for (const column of await columns(db, table)) {
          const found = await sql<{ row_id: number; value: string }>`
            select rowid as row_id, ${sql.ref(column)} as value from ${sql.table(table)}
            where typeof(${sql.ref(column)}) = 'text' and instr(${sql.ref(column)}, char(0)) > 0`.execute(db);
          for (const { row_id, value } of found.rows) {
            await sql`update ${sql.table(table)} set ${sql.ref(column)} = ${storableText(value)} where rowid = ${row_id}`.execute(db);
          }
        }
      }
    },
  };
}
