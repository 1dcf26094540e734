// The SQLite writer thread: prepared writes (the signal path) run there, on a connection of its
// own, so their statements and the commit's fsync never block the event loop. WriterThread is the
// main thread's side; serveWriterThread runs inside the thread.
import { Worker, parentPort, workerData } from 'node:worker_threads';
import type { ErrorCode } from '@hearth/protocol';
import { HearthError, isHearthError } from '../domain/errors.ts';
import { executePrepared, openConnection, statementCache } from './sqlite.ts';
import type { PreparedCall, PreparedRunner, PreparedTask, PreparedWriteModule } from './prepared-writes.ts';

/** An error as it crosses the thread boundary: a HearthError keeps its code and details. */
type WireError = { code: ErrorCode; details: Record<string, unknown> } | { message: string; stack?: string; errorCode?: string };

function toWire(error: unknown): WireError {
  if (isHearthError(error)) return { code: error.code, details: error.details };
  if (!(error instanceof Error)) return { message: String(error) };
  // The driver's code (SQLITE_FULL, SQLITE_BUSY) says how the main thread answers: a 507, a 503.
  const { code } = error as { code?: unknown };
  return { message: error.message, stack: error.stack, ...(typeof code === 'string' ? { errorCode: code } : {}) };
}

function fromWire(wire: WireError): Error {
  if ('code' in wire) return new HearthError(wire.code, wire.details);
  const error = new Error(`writer thread: ${wire.message}`);
  if (wire.stack) error.stack = wire.stack;
  if (wire.errorCode) Object.assign(error, { code: wire.errorCode });
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
  /** Whether the current worker has been handed a call (else it may still be booting, and holds nothing). */
  private handedCalls = false;
  private readonly tasks = new Map<number, { task: PreparedTask; onCommit: (topics: Set<string>) => void }>();
  private nextId = 1;
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly file: string) {}

  get outstanding(): number {
    return this.tasks.size;
  }

  submit(tasks: PreparedTask[], onCommit: (topics: Set<string>) => void): void {
    const worker = (this.worker ??= this.start());
    this.handedCalls = true;
    worker.ref(); // until every call has settled
    const calls = tasks.map((task): ThreadCall => {
      const id = this.nextId++;
      this.tasks.set(id, { task, onCommit });
      return { id, module: task.call.module, name: task.call.name, args: task.call.args };
    });
    try {
      worker.postMessage({ type: 'calls', calls } satisfies ToThread);
    } catch {
      // A value that cannot be cloned (the routes' schemas should have refused it) fails its own call, not its batch.
      for (const call of calls) this.postAlone(worker, call);
    }
  }

  /** Posts one call; if it cannot be posted, its caller gets the error now. */
  private postAlone(worker: Worker, call: ThreadCall): void {
    try {
      worker.postMessage({ type: 'calls', calls: [call] } satisfies ToThread);
    } catch (error) {
      const entry = this.tasks.get(call.id);
      this.tasks.delete(call.id);
      entry?.task.reject(error);
      this.afterSettling();
    }
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
    if (!this.handedCalls) {
      // Warmed up but never used: it may still be booting (seconds under tsx on a slow machine), and it holds
      // no transaction, so it is stopped rather than waited for. Its connection is closed as the thread ends.
      await worker.terminate();
      await exited;
      return;
    }
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
    this.handedCalls = false;
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
