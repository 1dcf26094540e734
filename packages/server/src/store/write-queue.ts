import type { Kysely, Transaction } from 'kysely';
import type { Database, NewEvent } from './schema.ts';
import { isHearthError } from '../domain/errors.ts';

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
  unit: WriteUnit<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** Options of the group committer. */
export interface WriteQueueOptions {
  /** Most units in one transaction (default 256). */
  maxBatch?: number;
  /** Called with the topics of each committed batch. */
  onCommit(topics: Set<string>): void;
}

/**
 * Group commit: units queued in the same turn of the event loop share one transaction, so one
 * fsync acknowledges many writes. Each caller's promise settles only after COMMIT returned.
 */
export class WriteQueue {
  private queue: Pending[] = [];
  private running = false;
  private scheduled = false;
  private readonly maxBatch: number;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly options: WriteQueueOptions,
  ) {
    this.maxBatch = options.maxBatch ?? 256;
  }

  /** Units waiting for a batch, for /metrics. */
  get depth(): number {
    return this.queue.length;
  }

  /** Queues a unit; resolves with its result once its transaction has committed. */
  run<T>(unit: WriteUnit<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ unit, resolve: (value) => resolve(value as T), reject });
      this.schedule();
    });
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
        const batch = this.queue.splice(0, this.maxBatch);
        await this.commitBatch(batch);
      }
    } finally {
      this.running = false;
    }
  }

  private async commitBatch(batch: Pending[]): Promise<void> {
    try {
      const settled = await this.transact(batch);
      settled.forEach((outcome, i) => (outcome.ok ? batch[i]!.resolve(outcome.value) : batch[i]!.reject(outcome.error)));
    } catch {
      // Something unexpected failed the whole transaction: run each unit on its own, so one bad
      // unit cannot take the others' writes with it.
      if (batch.length === 1) {
        await this.runAlone(batch[0]!);
        return;
      }
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

  private async transact(batch: Pending[]): Promise<Array<{ ok: true; value: unknown } | { ok: false; error: unknown }>> {
    const topics = new Set<string>();
    const outcomes = await this.db.transaction().execute(async (trx) => {
      const now = new Date().toISOString();
      const events: NewEvent[] = [];
      const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
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
          results.push({ ok: true, value: await pending.unit(ctx) });
          for (const topic of unitTopics) topics.add(topic);
          events.push(...unitEvents);
        } catch (error) {
          if (!isHearthError(error)) throw error;
          results.push({ ok: false, error });
        }
      }
      if (events.length > 0) await trx.insertInto('events').values(events).execute();
      for (const event of events) topics.add(`events:${event.project_id}`);
      return results;
    });
    this.options.onCommit(topics);
    return outcomes;
  }
}
