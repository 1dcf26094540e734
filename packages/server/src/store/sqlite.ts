import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import {
  CompiledQuery,
  Kysely,
  SqliteAdapter,
  SqliteDialect,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type SqliteDatabase,
} from 'kysely';
import type { Database as Tables, NewEvent } from './schema.ts';
import {
  bindParams,
  driveSync,
  precompile,
  preparedSteps,
  type Outcome,
  type Step,
  type PreparedCall,
  type PreparedWriteContext,
  type PreparedWriteModule,
} from './prepared-writes.ts';
import { isHearthError } from '../domain/errors.ts';
import { textGuard, UnstorableTextError } from './text-guard.ts';

/** Prepares each SQL text once per connection (a prepare costs more than a run: 30 µs vs 12 µs). */
export function statementCache(connection: Database.Database, limit = 500): (sqlText: string) => Database.Statement {
  const cache = new Map<string, Database.Statement>();
  return (sqlText) => {
    let statement = cache.get(sqlText);
    if (!statement) {
      statement = connection.prepare(sqlText);
      if (cache.size >= limit) cache.delete(cache.keys().next().value as string);
      cache.set(sqlText, statement);
    }
    return statement;
  };
}

/** Wraps a better-sqlite3 connection so Kysely re-uses prepared statements. */
function withStatementCache(connection: Database.Database): SqliteDatabase {
  const prepare = statementCache(connection);
  return { close: () => connection.close(), prepare };
}

/**
 * Opens one SQLite connection: WAL, synchronous=FULL (a commit is on disk before it returns).
 * Measured on the signal path (test/bench/tools/signal-writer.ts):
 * - reads are memory-mapped (up to 1 GiB of the file), so they cost no read syscalls and need no
 *   large page cache;
 * - the page cache stays small (8 MiB): SQLite walks the cache's whole hash table at the end of
 *   every write transaction, so a 64 MiB cache cost the writer ~30 µs of CPU per signal;
 * - checkpointing every 10,000 WAL pages (~40 MB) instead of 1,000 rewrites each hot index page
 *   less often. Durability is the same.
 */
export function openConnection(file: string, readonly: boolean): Database.Database {
  const connection = new Database(file, { readonly, fileMustExist: readonly });
  connection.pragma('busy_timeout = 5000');
  connection.pragma('mmap_size = 1073741824');
  if (!readonly) {
    connection.pragma('journal_mode = WAL');
    connection.pragma('synchronous = FULL');
    connection.pragma('foreign_keys = ON');
    connection.pragma('cache_size = -8192');
    connection.pragma('wal_autocheckpoint = 10000');
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

/**
 * Creates the database file readable by its owner only (0600) if it does not exist yet: it holds
 * deployment inputs and outputs, often secrets, and the data dir may be one the operator made
 * 0755 (systemd's StateDirectory= does). SQLite gives the `-wal` and `-shm` files the mode of the
 * database file.
 */
function createPrivately(file: string): void {
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

/**
 * The main connection's SQLite dialect, with two corrections to Kysely's:
 * - DDL in transactions. SQLite can roll back CREATE/ALTER/DROP, but Kysely's adapter says it
 *   cannot, so its Migrator ran each statement on its own: a migration that failed half way (a full
 *   disk, a killed process) left half its tables and columns behind, and every later start failed
 *   on them ("duplicate column name") until someone repaired the file by hand. With this the
 *   Migrator runs the pending migrations in one transaction, as it does on PostgreSQL.
 * - A rollback after SQLite has already rolled back. On SQLITE_FULL (a full disk) and some I/O
 *   errors SQLite ends the transaction itself; Kysely's ROLLBACK then failed with "cannot rollback -
 *   no transaction is active", and that error replaced the one that said what happened.
 * - BEGIN IMMEDIATE: every transaction on this connection writes. A deferred BEGIN reads first and
 *   then fails at once (SQLITE_BUSY, no busy wait) if another process wrote since that read: a
 *   `hearth-server migrate` started beside a starting `serve` failed one time in three. IMMEDIATE
 *   takes the write lock first, waiting up to the busy timeout.
 */
class WriterSqliteDialect extends SqliteDialect {
  override createAdapter(): DialectAdapter {
    return new (class extends SqliteAdapter {
      override get supportsTransactionalDdl(): boolean {
        return true;
      }
    })();
  }

  override createDriver(): Driver {
    const driver = super.createDriver();
    driver.beginTransaction = async (connection: DatabaseConnection) => {
      await connection.executeQuery(CompiledQuery.raw('begin immediate'));
    };
    const rollback = driver.rollbackTransaction.bind(driver);
    driver.rollbackTransaction = async (connection: DatabaseConnection) => {
      try {
        await rollback(connection);
      } catch (error) {
        if (error instanceof Error && /no transaction is active/.test(error.message)) return;
        throw error;
      }
    };
    return driver;
  }
}

/** Opens (creating if needed, mode 0600) the SQLite database file. */
export function openSqlite(file: string): SqliteHandles {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  createPrivately(file);
  const raw = openConnection(file, false);
  const readerConnection = openConnection(file, true);
  const writer = new Kysely<Tables>({
    dialect: new WriterSqliteDialect({ database: withStatementCache(raw) }),
    plugins: [textGuard],
  });
  const reader = new Kysely<Tables>({
    dialect: new SqliteDialect({ database: withStatementCache(readerConnection) }),
    plugins: [textGuard],
  });
  return { writer, reader, raw };
}

const insertEvent = precompile<NewEvent, unknown>((db, p) =>
  db.insertInto('events').values({
    project_id: p.project_id,
    time: p.time,
    type: p.type,
    resource_type: p.resource_type,
    resource_id: p.resource_id,
    server_id: p.server_id,
    message: p.message,
    data: p.data,
  }),
);

/** Most events in one INSERT (8 parameters each, far under SQLite's limit of 32,766). */
const EVENTS_PER_INSERT = 64;

/** `insertEvent` with `rows` tuples, by `rows` (built once each: the statement cache is keyed by the text). */
const insertEventsSql: string[] = [];
function insertEventsText(rows: number): string {
  let text = insertEventsSql[rows];
  if (text === undefined) {
    const at = insertEvent.sql.lastIndexOf(' values ');
    const tuple = insertEvent.sql.slice(at + ' values '.length);
    text = insertEventsSql[rows] = `${insertEvent.sql.slice(0, at)} values ${Array.from({ length: rows }, () => tuple).join(', ')}`;
  }
  return text;
}

/**
 * Inserts events in arrival order, EVENTS_PER_INSERT to a statement: a multi-row INSERT costs
 * about 6.5 µs of CPU per row against 8–10 µs for one statement per row (32-row batches).
 */
function insertEvents(prepare: (sqlText: string) => Database.Statement, events: NewEvent[]): void {
  for (let from = 0; from < events.length; from += EVENTS_PER_INSERT) {
    const chunk = events.slice(from, from + EVENTS_PER_INSERT);
    const values: unknown[] = [];
    for (const event of chunk) for (const value of bindParams(insertEvent, event)) values.push(value);
    prepare(insertEventsText(chunk.length)).run(values);
  }
}

/**
 * Runs prepared writes in one transaction (BEGIN IMMEDIATE ... COMMIT), then their events. A
 * HearthError fails only its own call; anything else rolls the batch back and each call is retried
 * in a transaction of its own, so one bad call cannot take the others' writes with it.
 */
export function executePrepared(
  connection: Database.Database,
  prepare: (sqlText: string) => Database.Statement,
  modules: ReadonlyMap<string, PreparedWriteModule>,
  calls: PreparedCall[],
): { outcomes: Outcome[]; topics: string[] } {
  const answer = (step: Step): unknown => {
    const statement = prepare(step.query.sql);
    const values = bindParams(step.query, step.params);
    return step.op === 'get' ? statement.get(values) : statement.run(values).changes;
  };
  const transact = (batch: PreparedCall[]) => {
    const now = new Date().toISOString();
    const topics = new Set<string>();
    const events: NewEvent[] = [];
    const outcomes: Outcome[] = [];
    let callTopics: string[] = [];
    let callEvents: NewEvent[] = [];
    const ctx: PreparedWriteContext = {
      now,
      ...preparedSteps,
      publish: (topic) => callTopics.push(topic),
      event: (event) => callEvents.push({ ...event, time: now }),
    };
    prepare('begin immediate').run();
    try {
      for (const call of batch) {
        callTopics = [];
        callEvents = [];
        try {
          const write = modules.get(call.module)?.preparedWrites[call.name];
          if (!write) throw new Error(`no prepared write ${call.name} in ${call.module}`);
          outcomes.push({ ok: true, value: driveSync(write(ctx, call.args as never), answer) });
          for (const topic of callTopics) topics.add(topic);
          for (const event of callEvents) events.push(event);
        } catch (error) {
          // A HearthError wrote nothing (the convention): only this call fails. Text the store
          // refused may come after a write: the batch rolls back, and each call runs alone.
          if (!isHearthError(error) || error instanceof UnstorableTextError) throw error;
          outcomes.push({ ok: false, error });
        }
      }
      insertEvents(prepare, events);
      for (const event of events) topics.add(`events:${event.project_id}`);
      prepare('commit').run();
    } catch (error) {
      if (connection.inTransaction) prepare('rollback').run();
      throw error;
    }
    return { outcomes, topics: [...topics] };
  };
  try {
    return transact(calls);
  } catch (error) {
    if (calls.length === 1) return { outcomes: [{ ok: false, error }], topics: [] };
    const outcomes: Outcome[] = [];
    const topics = new Set<string>();
    for (const call of calls) {
      try {
        const alone = transact([call]);
        outcomes.push(alone.outcomes[0]!);
        for (const topic of alone.topics) topics.add(topic);
      } catch (callError) {
        outcomes.push({ ok: false, error: callError });
      }
    }
    return { outcomes, topics: [...topics] };
  }
}
