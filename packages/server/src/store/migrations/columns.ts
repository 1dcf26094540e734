import { sql, type Kysely } from 'kysely';
import type { DialectName } from '../migrations.ts';

/**
 * Whether `table` has `column` now. Migrations that add a column check it first, so that one runs on a
 * database whose migration records were rewound or which was migrated by hand.
 */
// Kysely's migration API takes Kysely<any>: the schema is what the migration is changing.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function hasColumn(db: Kysely<any>, dialect: DialectName, table: string, column: string): Promise<boolean> {
  const found =
    dialect === 'sqlite'
      ? await sql`select 1 from pragma_table_info(${table}) where name = ${column}`.execute(db)
      : await sql`select 1 from information_schema.columns
          where table_schema = current_schema() and table_name = ${table} and column_name = ${column}`.execute(db);
  return found.rows.length > 0;
}
