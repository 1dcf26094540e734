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
  type PreparedTask,
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

/** A call as it goes to the thread: numbered, so each reply finds its caller. */
type ThreadCall = PreparedCall & { id: number };
type ToThread = { type: 'calls'; calls: ThreadCall[] } | { type: 'close' };
type WireOutcome = { id: number } & ({ ok: true; value: unknown } | { ok: false; error: WireError });
type FromThread = { type: 'done'; outcomes: WireOutcome[]; topics: string[] };

/** Most calls in one transaction of the writer thread. */
const MAX_THREAD_BATCH = 256;

/** Bootstraps the writer thread: TypeScript sources need tsx registered in the thread too. */
const THREAD_BOOT = `(async () => {
  const { workerData } = await import('node:worker_threads');
  if (workerData.tsx) (await import(workerData.tsx)).register();
  (await import(workerData.entry)).serveWriterThread();
})();`;

/**
 * The SQLite writer thread, seen from the main thread: prepared writes run there, on a connection
 * of its own, so statements and the commit's fsync do not block the event loop. Calls are posted
 * as they come; the thread group-commits whatever arrived while its previous transaction ran, so
 * it never waits for the main thread between transactions. Started on first use (or `warmUp`),
 * restarted after a crash (the calls it held fail).
 */
export class WriterThread implements PreparedRunner {
  private worker: Worker | undefined;
  private readonly tasks = new Map<number, { task: PreparedTask; onCommit: (topics: Set<string>) => void }>();
  private nextId = 1;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly file: string) {}

  get outstanding(): number {
    return this.tasks.size;
  }

  submit(tasks: PreparedTask[], onCommit: (topics: Set<string>) => void): void {
    const worker = (this.worker ??= this.start());
    worker.ref(); // until every call has settled
    const calls = tasks.map((task): ThreadCall => {
      const id = this.nextId++;
      this.tasks.set(id, { task, onCommit });
      return { id, module: task.call.module, name: task.call.name, args: task.call.args };
    });
    worker.postMessage({ type: 'calls', calls } satisfies ToThread);
  }

  settled(): Promise<void> {
    if (this.tasks.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Closes the thread's connection (after every call handed over has settled) and ends the thread. */
  async close(): Promise<void> {
    await this.settled();
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.ref(); // until its exit is seen
    worker.postMessage({ type: 'close' } satisfies ToThread);
    await exited;
  }

  /** Starts the thread now (idle, not keeping the process alive), so the first write does not wait for its boot. */
  warmUp(): void {
    this.worker ??= this.start();
    if (this.tasks.size === 0) this.worker.unref();
  }

  /** A committed transaction: its topics first, then its callers. */
  private committed(reply: FromThread): void {
    const entries = reply.outcomes.map((outcome) => {
      const entry = this.tasks.get(outcome.id);
      this.tasks.delete(outcome.id);
      return entry;
    });
    const topics = new Set(reply.topics);
    const told = new Set<(topics: Set<string>) => void>();
    for (const entry of entries) {
      if (entry && !told.has(entry.onCommit)) {
        told.add(entry.onCommit);
        entry.onCommit(topics);
      }
    }
    reply.outcomes.forEach((outcome, i) => {
      const task = entries[i]?.task;
      if (outcome.ok) task?.resolve(outcome.value);
      else task?.reject(fromWire(outcome.error));
    });
    this.afterSettling();
  }

  /** The thread failed or ended: every call it held fails. */
  private lost(worker: Worker, error: Error): void {
    if (this.worker === worker) this.worker = undefined;
    const entries = [...this.tasks.values()];
    this.tasks.clear();
    for (const entry of entries) entry.task.reject(error);
    this.afterSettling();
  }

  private afterSettling(): void {
    if (this.tasks.size > 0) return;
    this.worker?.unref();
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const wake of waiters) wake();
  }

  private start(): Worker {
    const entry = import.meta.url;
    const worker = new Worker(THREAD_BOOT, {
      eval: true,
      workerData: { entry, file: this.file, tsx: entry.endsWith('.ts') ? import.meta.resolve('tsx/esm/api') : undefined },
    });
    worker.on('message', (reply: FromThread) => this.committed(reply));
    worker.on('error', (error) => this.lost(worker, error));
    worker.on('exit', (code) => this.lost(worker, new Error(`writer thread exited (code ${code})`)));
    return worker;
  }
}

/**
 * The writer thread's side (started by WriterThread). Calls wait in arrival order; each
 * transaction takes all that are waiting (up to MAX_THREAD_BATCH). The next transaction starts
 * from a setImmediate, after the calls posted while this one ran have been received.
 */
export function serveWriterThread(): void {
  const port = parentPort;
  if (!port) throw new Error('serveWriterThread runs in a worker thread only');
  const connection = openConnection((workerData as { file: string }).file, false);
  const prepare = statementCache(connection);
  const modules = new Map<string, PreparedWriteModule>();
  const waiting: ThreadCall[] = [];
  let scheduled = false;
  let closing = false;
  const reply = (message: FromThread) => port.postMessage(message);
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => void runBatch());
  };
  const finish = () => {
    connection.close();
    port.close();
  };
  const runBatch = async () => {
    const batch = waiting.splice(0, MAX_THREAD_BATCH);
    try {
      for (const call of batch) {
        if (!modules.has(call.module)) modules.set(call.module, (await import(call.module)) as PreparedWriteModule);
      }
      const { outcomes, topics } = executePrepared(connection, prepare, modules, batch);
      reply({
        type: 'done',
        topics,
        outcomes: outcomes.map((o, i): WireOutcome =>
          o.ok ? { id: batch[i]!.id, ...o } : { id: batch[i]!.id, ok: false, error: toWire(o.error) },
        ),
      });
    } catch (error) {
      const wire = toWire(error);
      reply({ type: 'done', topics: [], outcomes: batch.map((call): WireOutcome => ({ id: call.id, ok: false, error: wire })) });
    }
    scheduled = false;
    if (waiting.length > 0) schedule();
    else if (closing) finish();
  };
  port.on('message', (message: ToThread) => {
    if (message.type === 'close') {
      closing = true;
      if (!scheduled && waiting.length === 0) finish();
      return;
    }
    for (const call of message.calls) waiting.push(call);
    schedule();
  });
}
