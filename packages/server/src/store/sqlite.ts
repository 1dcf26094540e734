import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker, parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase } from 'kysely';
import type { Database as Tables, NewEvent } from './schema.ts';
import {
  bindParams,
  driveSync,
  precompile,
  preparedSteps,
  type Outcome,
  type Step,
  type PreparedCall,
  type PreparedRunner,
  type PreparedWriteContext,
  type PreparedWriteModule,
} from './write-queue.ts';
import { HearthError, isHearthError } from '../domain/errors.ts';
import type { ErrorCode } from '@hearth/protocol';

/** Prepares each SQL text once per connection (a prepare costs more than a run: 30 µs vs 12 µs). */
function statementCache(connection: Database.Database, limit = 500): (sqlText: string) => Database.Statement {
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
function openConnection(file: string, readonly: boolean): Database.Database {
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

/** Opens (creating if needed) the SQLite database file. */
export function openSqlite(file: string): SqliteHandles {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const raw = openConnection(file, false);
  const readerConnection = openConnection(file, true);
  const writer = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  const reader = new Kysely<Tables>({ dialect: new SqliteDialect({ database: withStatementCache(readerConnection) }) });
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
          // A HearthError wrote nothing (the convention): only this call fails.
          if (!isHearthError(error)) throw error;
          outcomes.push({ ok: false, error });
        }
      }
      for (const event of events) {
        answer({ op: 'run', query: insertEvent, params: event });
        topics.add(`events:${event.project_id}`);
      }
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

/** An error as it crosses the thread boundary: a HearthError keeps its code and details. */
type WireError = { code: ErrorCode; details: Record<string, unknown> } | { message: string; stack?: string };

function toWire(error: unknown): WireError {
  if (isHearthError(error)) return { code: error.code, details: error.details };
  return error instanceof Error ? { message: error.message, stack: error.stack } : { message: String(error) };
}

function fromWire(wire: WireError): Error {
  if ('code' in wire) return new HearthError(wire.code, wire.details);
  const error = new Error(`writer thread: ${wire.message}`);
  if (wire.stack) error.stack = wire.stack;
  return error;
}

type ToThread = { type: 'batch'; calls: PreparedCall[] } | { type: 'close' };
type FromThread =
  { type: 'done'; outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: WireError }>; topics: string[] } | { type: 'closed' };

/** Bootstraps the writer thread: TypeScript sources need tsx registered in the thread too. */
const THREAD_BOOT = `(async () => {
  const { workerData } = await import('node:worker_threads');
  if (workerData.tsx) (await import(workerData.tsx)).register();
  (await import(workerData.entry)).serveWriterThread();
})();`;

/**
 * The SQLite writer thread, seen from the main thread: prepared writes run there, on a connection
 * of its own, so statements and the commit's fsync do not block the event loop. One batch at a
 * time; started on first use, restarted after a crash (its batch fails).
 */
export class WriterThread implements PreparedRunner {
  private worker: Worker | undefined;
  private waiting: { resolve(reply: FromThread): void; reject(error: Error): void } | undefined;

  constructor(private readonly file: string) {}

  run(calls: PreparedCall[]): Promise<{ outcomes: Outcome[]; topics: string[] }> {
    return this.send({ type: 'batch', calls }).then((reply) => {
      if (reply.type !== 'done') throw new Error(`writer thread: unexpected reply ${reply.type}`);
      return {
        topics: reply.topics,
        outcomes: reply.outcomes.map((o): Outcome => (o.ok ? o : { ok: false, error: fromWire(o.error) })),
      };
    });
  }

  /** Closes the thread's connection and ends the thread. */
  async close(): Promise<void> {
    if (!this.worker) return;
    const worker = this.worker;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    await this.send({ type: 'close' }).catch(() => undefined);
    worker.ref(); // until its exit is seen
    await exited;
  }

  /** Starts the thread now (idle, not keeping the process alive), so the first write does not wait for its boot. */
  warmUp(): void {
    this.worker ??= this.start();
    this.worker.unref();
  }

  private send(message: ToThread): Promise<FromThread> {
    if (this.waiting) return Promise.reject(new Error('writer thread: a batch is already running'));
    const worker = (this.worker ??= this.start());
    worker.ref();
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      worker.postMessage(message);
    });
  }

  private start(): Worker {
    const entry = import.meta.url;
    const worker = new Worker(THREAD_BOOT, {
      eval: true,
      workerData: { entry, file: this.file, tsx: entry.endsWith('.ts') ? import.meta.resolve('tsx/esm/api') : undefined },
    });
    const settle = (reply: FromThread | Error) => {
      const waiting = this.waiting;
      this.waiting = undefined;
      worker.unref();
      if (reply instanceof Error) waiting?.reject(reply);
      else waiting?.resolve(reply);
    };
    worker.on('message', (reply: FromThread) => settle(reply));
    worker.on('error', (error) => settle(error));
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      settle(new Error(`writer thread exited (code ${code})`));
    });
    return worker;
  }
}

/** The writer thread's side (started by WriterThread): runs each batch it is sent, in order. */
export function serveWriterThread(): void {
  const port = parentPort;
  if (!port) throw new Error('serveWriterThread runs in a worker thread only');
  const connection = openConnection((workerData as { file: string }).file, false);
  const prepare = statementCache(connection);
  const modules = new Map<string, PreparedWriteModule>();
  const reply = (message: FromThread) => port.postMessage(message);
  let chain = Promise.resolve();
  port.on('message', (message: ToThread) => {
    chain = chain.then(async () => {
      if (message.type === 'close') {
        connection.close();
        reply({ type: 'closed' });
        port.close();
        return;
      }
      try {
        for (const call of message.calls) {
          if (!modules.has(call.module)) modules.set(call.module, (await import(call.module)) as PreparedWriteModule);
        }
        const { outcomes, topics } = executePrepared(connection, prepare, modules, message.calls);
        reply({ type: 'done', topics, outcomes: outcomes.map((o) => (o.ok ? o : { ok: false, error: toWire(o.error) })) });
      } catch (error) {
        const wire = toWire(error);
        reply({ type: 'done', topics: [], outcomes: message.calls.map(() => ({ ok: false, error: wire })) });
      }
    });
  });
}
