import type { Kysely, Transaction } from 'kysely';
import type { Database, NewEvent } from './schema.ts';
import { isHearthError } from '../domain/errors.ts';
import { isStoreUnavailable } from './unavailable.ts';
import { UnstorableTextError } from './text-guard.ts';
import type { Outcome, PreparedCall, PreparedRunner, PreparedTask, PreparedWrite } from './prepared-writes.ts';

/** Most events in one INSERT of a batch (8 parameters each). */
const EVENTS_PER_STATEMENT = 500;

/**
 * Prepared writes queued (and nothing else) that go to the runner at once, not at the end of the
 * event loop's turn: the writer thread starts on them while the loop still reads requests, instead
 * of the two taking turns. In side-by-side runs (test/bench/README.md) four gave +7-21 % signals a
 * second; one and two gained less or unevenly, eight and sixteen about 4 %.
 */
export const PREPARED_HANDOFF_AT = 4;

/** What a unit of work gets: the transaction, the batch's clock, and places to record effects. */
export interface WriteContext {
  /** The open transaction. */
  trx: Transaction<Database>;
  /** The batch's timestamp (ISO, ms): every row written in one batch carries the same time. */
  now: string;
  /** Feed topics to publish once the transaction has committed. */
  publish: (topic: string) => void;
  /** An event row to insert in the same transaction. */
  event: (event: Omit<NewEvent, 'time'>) => void;
}

/**
 * A unit of work. Convention: a unit that throws a HearthError (a client error) must throw it
 * before it writes anything, so the rest of its batch can still commit.
 */
export type WriteUnit<T> = (ctx: WriteContext) => Promise<T>;

interface Pending {
  unit?: WriteUnit<unknown>;
  call?: PreparedCall;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const isCall = (pending: Pending): boolean => pending.call !== undefined;

/** Dialect-specific steps of every group-commit transaction (PostgreSQL: a lock and NOTIFY). */
export interface TransactionHooks {
  /** First thing in the transaction, before any unit runs. */
  begin?(trx: Transaction<Database>): Promise<void>;
  /** Last thing before COMMIT, with the topics the batch will publish. */
  beforeCommit?(trx: Transaction<Database>, topics: ReadonlySet<string>): Promise<void>;
}

/** Options of the group committer. */
export interface WriteQueueOptions {
  /** Runs in every transaction (see TransactionHooks). */
  hooks?: TransactionHooks;
  /** Most units in one transaction (default 256). */
  maxBatch?: number;
  /** Called with the topics of each committed batch. */
  onCommit(topics: Set<string>): void;
  /** Runs prepared writes (the writer thread); required for `runPrepared`. */
  prepared?: PreparedRunner;
}

/**
 * Group commit: units queued in the same turn of the event loop share one transaction, so one
 * fsync acknowledges many writes. Each caller's promise settles only after COMMIT returned.
 * Prepared writes go to the prepared runner as soon as they reach the head of the queue (when
 * PREPARED_HANDOFF_AT of them are queued, without waiting for the turn to end); it group-commits
 * them on its own connection. A unit waits until the runner has settled everything
 * handed to it, and prepared writes queued behind a unit wait for the unit: one writer at a time,
 * so the two connections never contend.
 */
export class WriteQueue {
  private queue: Pending[] = [];
  private running = false;
  private scheduled = false;
  private readonly maxBatch: number;
  /** Tells `onCommit` a prepared transaction's topics (one function, so a runner tells it once per transaction). */
  private readonly publish = (topics: Set<string>): void => this.options.onCommit(topics);

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: WriteQueueOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 256;
  }

  /** Writes queued or running and not committed yet, for /metrics. */
  get depth(): number {
    return this.queue.length + (this.options.prepared?.outstanding ?? 0);
  }

  /** Queues a unit; resolves with its result once its transaction has committed. */
  run<T>(unit: WriteUnit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ unit, resolve: resolve, reject });
      this.schedule();
    });
  }

  /** Queues a prepared write; resolves with its result once its transaction has committed. */
  runPrepared<A, R>(write: PreparedWrite<A, R>, args: A): Promise<R> {
    if (!this.options.prepared) return Promise.reject(new Error('this store runs no prepared writes'));
    return new Promise<R>((resolve, reject) => {
      this.queue.push({ call: { module: write.module, name: write.name, args }, resolve: resolve, reject });
      if (this.handOffNow()) this.handOver(this.queue.splice(0) as PreparedTask[]);
      else this.schedule();
    });
  }

  /**
   * Whether the queue holds enough prepared writes, and only those, to hand over now. While a
   * drain runs (a unit may be waiting or in its transaction) calls wait for it, so none passes a
   * unit queued before it. Cheap: a unit in the queue stands within the first PREPARED_HANDOFF_AT.
   */
  private handOffNow(): boolean {
    return !this.running && this.queue.length >= PREPARED_HANDOFF_AT && this.leading(isCall, Infinity) === this.queue.length;
  }

  /** Resolves once every write queued so far has settled. */
  async drained(): Promise<void> {
    const prepared = this.options.prepared;
    while (this.running || this.scheduled || this.queue.length > 0 || (prepared && prepared.outstanding > 0)) {
      if (prepared && prepared.outstanding > 0) await prepared.settled();
      else await new Promise((resolve) => setImmediate(resolve));
    }
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const prepared = this.options.prepared;
        const calls = this.leading(isCall, Infinity);
        if (calls > 0) {
          // Every prepared write at the head goes at once: the runner batches them itself.
          this.handOver(this.queue.splice(0, calls) as PreparedTask[]);
          continue;
        }
        // Units run on this queue's connection, never while the runner may hold the write lock.
        if (prepared && prepared.outstanding > 0) await prepared.settled();
        await this.commitBatch(
          this.queue.splice(
            0,
            this.leading((p) => p.unit !== undefined, this.maxBatch),
          ),
        );
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * Gives prepared writes to the runner. If it cannot take them (its thread cannot start), each
   * caller gets the error now: none is left waiting, and the queue goes on.
   */
  private handOver(tasks: PreparedTask[]): void {
    try {
      this.options.prepared!.submit(tasks, this.publish);
    } catch (error) {
      for (const task of tasks) task.reject(error);
    }
  }

  /** How many entries at the head of the queue (at most `max`) match. */
  private leading(match: (pending: Pending) => boolean, max: number): number {
    let n = 0;
    while (n < this.queue.length && n < max && match(this.queue[n]!)) n++;
    return n;
  }

  private async commitBatch(batch: Pending[]): Promise<void> {
    try {
      const settled = await this.transact(batch);
      settled.forEach((outcome, i) => (outcome.ok ? batch[i]!.resolve(outcome.value) : batch[i]!.reject(outcome.error)));
    } catch (error) {
      // The database is gone (or the COMMIT's outcome is unknown): running the units again could
      // apply one twice, and would only fail again. Each caller gets the outage (a 503) and retries.
      if (isStoreUnavailable(error)) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      // Something unexpected failed the whole transaction: run each unit on its own, so one bad
      // unit cannot take the others' writes with it.
      for (const pending of batch) await this.runAlone(pending);
    }
  }

  private async runAlone(pending: Pending): Promise<void> {
    try {
      const [outcome] = await this.transact([pending]);
      if (outcome!.ok) pending.resolve(outcome!.value);
      else pending.reject(outcome!.error);
    } catch (error) {
      pending.reject(error);
    }
  }

  private async transact(batch: Pending[]): Promise<Outcome[]> {
    const topics = new Set<string>();
    const hooks = this.options.hooks;
    const outcomes = await this.db.transaction().execute(async (trx) => {
      if (hooks?.begin) await hooks.begin(trx);
      const now = new Date().toISOString();
      const events: NewEvent[] = [];
      const results: Outcome[] = [];
      for (const pending of batch) {
        const unitTopics: string[] = [];
        const unitEvents: NewEvent[] = [];
        const ctx: WriteContext = {
          trx,
          now,
          publish: (topic) => unitTopics.push(topic),
          event: (event) => unitEvents.push({ ...event, time: now }),
        };
        try {
          results.push({ ok: true, value: await pending.unit!(ctx) });
          for (const topic of unitTopics) topics.add(topic);
          events.push(...unitEvents);
        } catch (error) {
          // Text the store refused (a NUL) may come after the unit wrote something: the batch rolls
          // back, and each unit runs alone, this one to its own rollback and a 400.
          if (!isHearthError(error) || error instanceof UnstorableTextError) throw error;
          results.push({ ok: false, error });
        }
      }
      // In chunks: one INSERT of every event of a large batch would pass SQLite's 32,766 bound
      // parameters (4,095 events of 8 columns) or PostgreSQL's 65,535, and fail the whole batch.
      for (let from = 0; from < events.length; from += EVENTS_PER_STATEMENT) {
        await trx
          .insertInto('events')
          .values(events.slice(from, from + EVENTS_PER_STATEMENT))
          .execute();
      }
      for (const event of events) topics.add(`events:${event.project_id}`);
      if (hooks?.beforeCommit && topics.size > 0) await hooks.beforeCommit(trx, topics);
      return results;
    });
    this.options.onCommit(topics);
    return outcomes;
  }
}
