// What hearth-server checks of a PostgreSQL database at start: settings it cannot work with (before
// migrating) and privileges serve lacks (after), each refused by name with what to change.
import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';

/** The fewest connections a replica works with: the change feed's, the write connection and one for reads. */
const FEWEST_CONNECTIONS = 3;

/** A replica's read and write connections (store.ts opens 9 + 1); the change feed adds one. */
const READ_AND_WRITE_CONNECTIONS = 10;

/** The table privileges serve needs on each of hearth's tables (and USAGE on their sequences). */
const TABLE_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'];

/** A database set up in a way hearth-server cannot work with; the message says which setting and what to do. */
function setupError(message: string): Error {
  return Object.assign(new Error(message), { code: 'ERR_DATABASE_SETUP' });
}

/**
 * Refuses, before migrating, a database whose settings hearth cannot work with, with the setting
 * and what to change. Each used to start: a non-UTF8 encoding took signals until one carried a
 * character it lacks (a 400 that called it a NUL, the result lost); a search_path naming no schema,
 * or another schema than hearth's tables are in, failed with a bare "relation does not exist" (exit
 * 1); a connection limit under 3 started and answered every read 503 for good.
 */
export async function checkPostgresSettings(db: Kysely<Database>): Promise<void> {
  const { rows } = await sql<{
    user: string;
    database: string;
    schema: string | null;
    search_path: string;
    encoding: string;
    migrated_in: string | null;
    superuser: boolean;
    role_limit: number;
    database_limit: number;
    server_limit: number;
  }>`select current_user as "user", current_database() as database, current_schema() as schema,
      current_setting('search_path') as search_path, pg_encoding_to_char(d.encoding) as encoding,
      (select string_agg(distinct n.nspname, ', ') from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.relname = 'kysely_migration' and c.relkind in ('r', 'p')) as migrated_in,
      r.rolsuper as superuser, r.rolconnlimit as role_limit, d.datconnlimit as database_limit,
      current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
        - coalesce(nullif(current_setting('reserved_connections', true), '')::int, 0) as server_limit
    from pg_database d, pg_roles r where d.datname = current_database() and r.rolname = current_user`.execute(db);
  const found = rows[0];
  if (!found) return; // a role that cannot read the catalogs: nothing to check against
  const { user, database, schema, search_path: searchPath, encoding, migrated_in: migratedIn } = found;
  // SQL_ASCII stores the bytes it is given (no conversion), so UTF-8 text comes back as it went in.
  if (encoding !== 'UTF8' && encoding !== 'SQL_ASCII') {
    throw setupError(
      `database ${database} has encoding ${encoding}, which cannot hold every character agents send (a signal carrying one would be refused and its result lost): ` +
        `give hearth a UTF8 database (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)`,
    );
  }
  const setSearchPath = `ALTER ROLE ${user} SET search_path = ..., or options=-c%20search_path%3D... in --database-url`;
  if (schema === null) {
    throw setupError(
      `search_path (${searchPath}) names no schema that exists in database ${database}, so hearth has nowhere to keep its tables: ` +
        `create that schema, or set search_path to one that exists (${setSearchPath})`,
    );
  }
  if (migratedIn !== null && !migratedIn.split(', ').includes(schema)) {
    throw setupError(
      `hearth's tables are in schema ${migratedIn} of database ${database}, but search_path (${searchPath}) makes this connection use schema ${schema}: ` +
        `put ${migratedIn} first in search_path (${setSearchPath}), so every replica and migrate use the same tables`,
    );
  }
  if (found.superuser) return; // connection limits do not apply to superusers
  const limits: Array<[number, string]> = [
    [found.role_limit, `role ${user} may open at most ${found.role_limit} connections (ALTER ROLE ${user} CONNECTION LIMIT)`],
    [
      found.database_limit,
      `database ${database} takes at most ${found.database_limit} connections (ALTER DATABASE ${database} CONNECTION LIMIT)`,
    ],
    [
      found.server_limit,
      `the server takes at most ${found.server_limit} connections from users other than superusers (max_connections less the reserved ones)`,
    ],
  ];
  for (const [limit, what] of limits) {
    if (limit >= 0 && limit < FEWEST_CONNECTIONS) {
      throw setupError(
        `${what}, and each hearth-server needs at least ${FEWEST_CONNECTIONS} (up to ${READ_AND_WRITE_CONNECTIONS + 1}: one for the change feed, one for writes, the rest for reads): ` +
          `raise it to ${READ_AND_WRITE_CONNECTIONS + 1} per replica plus what your tools use`,
      );
    }
  }
}

/**
 * Refuses, after migrating, a role that lacks a privilege serve needs on hearth's `tables` in the
 * current schema (a role made for serve, with the tables owned by the one that ran migrate), naming
 * each missing one: a request that needed it used to fail with a 500, and only that request.
 */
export async function checkPostgresPrivileges(db: Kysely<Database>, tables: readonly string[]): Promise<void> {
  const { rows } = await sql<{ name: string; privilege: string; kind: string }>`
    select c.relname as name, p.privilege, 'table' as kind
      from pg_class c cross join unnest(${TABLE_PRIVILEGES}::text[]) as p(privilege)
      where c.relnamespace = (select oid from pg_namespace where nspname = current_schema())
        and c.relname = any(${tables}::text[]) and c.relkind in ('r', 'p') and not has_table_privilege(c.oid, p.privilege)
    union all
    select s.relname, 'USAGE', 'sequence'
      from pg_class s join pg_depend d on d.classid = 'pg_class'::regclass and d.objid = s.oid and d.deptype in ('a', 'i')
      join pg_class t on t.oid = d.refobjid
      where s.relkind = 'S' and t.relnamespace = (select oid from pg_namespace where nspname = current_schema())
        and t.relname = any(${tables}::text[]) and d.refobjsubid > 0
        -- In a CASE: the planner may test it before relkind = 'S', on a TOAST table (which depends on its table too), and fail.
        and case when s.relkind = 'S' then not has_sequence_privilege(s.oid, 'USAGE') else false end
    order by 3, 1, 2`.execute(db);
  if (rows.length === 0) return;
  const byObject = new Map<string, string[]>();
  for (const row of rows) byObject.set(`${row.kind} ${row.name}`, [...(byObject.get(`${row.kind} ${row.name}`) ?? []), row.privilege]);
  const missing = [...byObject].map(([what, privileges]) => `${privileges.join(', ')} on ${what}`);
  const { rows: who } = await sql<{ user: string; schema: string }>`select current_user as "user", current_schema() as schema`.execute(db);
  const user = who[0]?.user ?? 'this user';
  const schema = who[0]?.schema ?? 'public';
  throw setupError(
    `the database user ${user} lacks privileges hearth-server needs: ${missing.join('; ')}. As the tables' owner, ` +
      `GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${schema} TO ${user}; GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${schema} TO ${user}`,
  );
}
