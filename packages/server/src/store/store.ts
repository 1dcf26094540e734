import { join } from 'node:path';
import { Migrator, sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';
import { migrations, type DialectName } from './migrations.ts';
import { openSqlite, WriterThread } from './sqlite.ts';
import { WriteQueue, type PreparedWrite, type WriteUnit } from './write-queue.ts';
import { HearthError } from '../domain/errors.ts';

/** Where the store lives: a SQLite file in the data dir, unless a database URL is given. */
export interface StoreOptions {
  /** Data directory; the SQLite file is `<dataDir>/hearth.db`. */
  dataDir: string;
  /** `postgres://...` selects PostgreSQL (not in this build yet); unset means SQLite. */
  databaseUrl?: string;
  /** Called with the feed topics of every committed write batch. */
  onCommit?: (topics: Set<string>) => void;
}

/** The store: group-committed writes, committed-only reads, migrations. */
export interface Store {
  /** Which SQL dialect is underneath. */
  readonly dialect: DialectName;
  /** Reads (never blocked behind the writer; sees committed data only). */
  readonly reader: Kysely<Database>;
  /** Runs a unit of work in a group-committed transaction; resolves after COMMIT. */
  write<T>(unit: WriteUnit<T>): Promise<T>;
  /**
   * Runs a prepared write (precompiled statements, plain data in and out) in a group-committed
   * transaction on the writer thread, off the event loop; resolves after COMMIT.
   */
  writePrepared<A, R>(write: PreparedWrite<A, R>, args: A): Promise<R>;
  /** Units waiting for a batch. */
  writeQueueDepth(): number;
  /** Applies pending migrations; returns the names applied. */
  migrate(): Promise<string[]>;
  /** Throws ERR_STORE_UNAVAILABLE if the database does not answer. */
  ping(): Promise<void>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Opens the store (does not migrate). */
export function openStore(options: StoreOptions): Store {
  if (options.databaseUrl && !options.databaseUrl.startsWith('sqlite:')) {
    throw new Error(
      `database URL ${redactDatabaseUrl(options.databaseUrl)} is not supported by this build: leave HEARTH_DATABASE_URL unset to use SQLite in the data dir`,
    );
  }
  const file = options.databaseUrl ? options.databaseUrl.slice('sqlite:'.length) : join(options.dataDir, 'hearth.db');
  const { writer, reader, raw } = openSqlite(file);
  const thread = new WriterThread(file);
  const queue = new WriteQueue(writer, { onCommit: options.onCommit ?? (() => undefined), prepared: thread });
  return {
    dialect: 'sqlite',
    reader,
    write: (unit) => queue.run(unit),
    writePrepared: (write, args) => queue.runPrepared(write, args),
    writeQueueDepth: () => queue.depth,
    async migrate() {
      const migrator = new Migrator({
        db: writer,
        provider: { getMigrations: () => Promise.resolve(migrations('sqlite')) },
      });
      const { error, results } = await migrator.migrateToLatest();
      if (error) throw error instanceof Error ? error : new Error(`migration failed: ${JSON.stringify(error)}`);
      thread.warmUp(); // the schema is in place: the writer thread can open its connection
      return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    },
    async ping() {
      try {
        await sql`select 1`.execute(reader);
      } catch {
        throw new HearthError('ERR_STORE_UNAVAILABLE');
      }
    },
    async close() {
      await queue.drained();
      await thread.close();
      await writer.destroy();
      await reader.destroy();
      if (raw.open) raw.close();
    },
  };
}

/** Hides the password of a database URL, for messages and logs. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@');
}
