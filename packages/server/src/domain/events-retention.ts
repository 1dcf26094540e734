// Events retention: every state change, heartbeat and signal writes an event row, so without a
// purge the events table (and with it the database) grows for as long as the fleet runs. A minute
// after start, then every 10 minutes, the events older than the retention are deleted, then each
// project's events beyond the newest N (an agent heartbeating in a loop fills a month in hours),
// oldest first, in batches that each take their turn in the write queue like any other write. Each
// batch records, in its transaction, the highest id it deleted per project (events_pruned): a reader
// whose cursor is below it is told its events are gone (events.ts), never handed the later ones.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database } from '../store/schema.ts';
import { TaskHealth } from './task-health.ts';

/** Days events are kept by default (HEARTH_EVENTS_RETENTION_DAYS); 0 keeps them for ever. */
export const EVENTS_RETENTION_DAYS = 30;
/** The longest retention accepted, in days (100 years). */
export const EVENTS_RETENTION_MAX_DAYS = 36_500;
/**
 * Events kept per project by default (HEARTH_EVENTS_MAX_PER_PROJECT); 0 sets no bound. A month of a
 * fleet of about 1,000 VMs (a few deployments a day each, a handful of events per deployment, a
 * heartbeat a minute while a hook runs) is well under it; at a few hundred bytes an event, a
 * project's events stay within a few hundred MB.
 */
export const EVENTS_MAX_PER_PROJECT = 1_000_000;
/** The largest count bound accepted (a billion). */
export const EVENTS_MAX_PER_PROJECT_LIMIT = 1_000_000_000;
/** How long after start the first purge runs (default 1 min): not in the way of a start's burst of reconnecting agents. */
export const PURGE_FIRST_MS = 60_000;
/** How long between purges (default 10 min). */
export const PURGE_EVERY_MS = 10 * 60_000;
/** Events deleted per write transaction (default 5,000): a few tens of ms of the writer's time at most. */
export const PURGE_BATCH = 5_000;

/** Options of the events retention. */
export interface EventsRetentionOptions {
  /** Days events are kept (default EVENTS_RETENTION_DAYS); 0 keeps them for ever and starts no task. */
  days?: number | undefined;
  /** Events kept per project, the newest (default EVENTS_MAX_PER_PROJECT); 0 sets no bound. */
  maxPerProject?: number | undefined;
  /** Events deleted per write transaction (default PURGE_BATCH). */
  batch?: number;
  /** Told how many events each batch deleted (the /metrics counter). */
  onPurged?: (count: number) => void;
}

/** Deletes the events older than the retention, in the background (see the file's comment). */
export class EventsRetention {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopping = false;
  private readonly health: TaskHealth;
  private readonly days: number;
  private readonly maxPerProject: number;
  private readonly batch: number;
  private readonly onPurged: (count: number) => void;

  constructor(
    private readonly store: Store,
    options: EventsRetentionOptions,
    logError: (error: unknown) => void,
  ) {
    this.days = options.days ?? EVENTS_RETENTION_DAYS;
    this.maxPerProject = options.maxPerProject ?? EVENTS_MAX_PER_PROJECT;
    this.batch = options.batch ?? PURGE_BATCH;
    this.onPurged = options.onPurged ?? (() => undefined);
    this.health = new TaskHealth('events retention', logError);
  }

  /** Purges after `firstMs`, then every `everyMs` after each run ends; nothing when events are kept for ever and unbounded. */
  start(firstMs = PURGE_FIRST_MS, everyMs = PURGE_EVERY_MS): void {
    if ((this.days === 0 && this.maxPerProject === 0) || this.timer) return;
    this.stopping = false;
    const schedule = (ms: number): void => {
      this.timer = setTimeout(() => {
        this.running = this.purge()
          .then(
            () => this.health.succeeded(),
            (error: unknown) => this.health.failed(error),
          )
          .finally(() => {
            this.running = undefined;
            if (!this.stopping) schedule(everyMs);
          });
      }, ms).unref();
    };
    schedule(firstMs);
  }

  /** Stops the task; resolves once a run in progress has ended (after its current batch). */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One run: deletes the events older than the retention at `now`, then those beyond each project's bound; returns how many. */
  async purge(now = Date.now()): Promise<number> {
    let purged = 0;
    if (this.days > 0) purged += await this.purgeOlderThan(new Date(now - this.days * 86_400_000).toISOString());
    if (this.maxPerProject === 0) return purged;
    const projects = await this.store.reader.selectFrom('projects').select('id').orderBy('id').execute();
    for (const { id } of projects) {
      if (this.stopping) break;
      purged += await this.purgeBeyondCount(id);
    }
    return purged;
  }

  /** Deletes the events older than `cutoff`, batch by batch; returns how many. */
  private async purgeOlderThan(cutoff: string): Promise<number> {
    let purged = 0;
    // Each batch deletes at least one event or ends the run, so the loop is bounded by the table.
    while (!this.stopping) {
      const last = await this.lastExpiredId(cutoff);
      if (last === undefined) break;
      // A range of the primary key: PostgreSQL planned `id IN (subquery)` as a scan of the whole table.
      const deleted = await this.store.write(async ({ trx }) => {
        const expired = trx.selectFrom('events').where('id', '<=', last).where('time', '<', cutoff);
        const marks = await expired
          .select((eb) => ['project_id', eb.fn.max('id').as('through')])
          .groupBy('project_id')
          .execute();
        const result = await trx.deleteFrom('events').where('id', '<=', last).where('time', '<', cutoff).executeTakeFirst();
        await markPruned(trx, marks);
        return result;
      });
      const count = Number(deleted.numDeletedRows);
      if (count === 0) break; // another replica deleted them first
      purged += count;
      this.onPurged(count);
      await nextTurn();
    }
    return purged;
  }

  /**
   * Deletes a project's events beyond its newest `maxPerProject`, oldest first, batch by batch;
   * returns how many. Events written meanwhile are newer than the boundary, so they are kept.
   */
  private async purgeBeyondCount(projectId: string): Promise<number> {
    const db = this.store.reader;
    const ofProject = db.selectFrom('events').where('project_id', '=', projectId);
    // The newest event beyond the bound: a walk down the (project_id, id) index of `maxPerProject` entries.
    const boundary = await ofProject.select('id').orderBy('id', 'desc').limit(1).offset(this.maxPerProject).executeTakeFirst();
    if (boundary === undefined) return 0;
    let purged = 0;
    while (!this.stopping) {
      const oldest = ofProject.select('id').where('id', '<=', boundary.id).orderBy('id').limit(this.batch).as('oldest');
      const row = await db
        .selectFrom(oldest)
        .select((eb) => eb.fn.max('oldest.id').as('last'))
        .executeTakeFirst();
      if (row?.last == null) break;
      const last = Number(row.last);
      const deleted = await this.store.write(async ({ trx }) => {
        const result = await trx.deleteFrom('events').where('project_id', '=', projectId).where('id', '<=', last).executeTakeFirst();
        if (Number(result.numDeletedRows) > 0) await markPruned(trx, [{ project_id: projectId, through: last }]);
        return result;
      });
      const count = Number(deleted.numDeletedRows);
      if (count === 0) break; // another replica deleted them first
      purged += count;
      this.onPurged(count);
      await nextTurn();
    }
    return purged;
  }

  /**
   * The highest id, among the `batch` oldest events, of one older than `cutoff` (undefined if none):
   * the events up to it are at most a batch. `time` has no index, but ids grow with time, so the oldest
   * ids are the expired ones and the primary key finds them in a bounded scan, where `WHERE time <
   * cutoff` alone read the whole table on every run that had nothing to delete. It is read outside the
   * write queue, so a run with nothing to delete takes no write turn (nor, on PostgreSQL, the write
   * lock). An event written while the clock was behind (older id, newer time) stays until the cutoff
   * passes it.
   */
  private async lastExpiredId(cutoff: string): Promise<number | undefined> {
    const db = this.store.reader;
    const oldest = db.selectFrom('events').select(['id', 'time']).orderBy('id').limit(this.batch).as('oldest');
    const row = await db
      .selectFrom(oldest)
      .select((eb) => eb.fn.max('oldest.id').as('last'))
      .where('oldest.time', '<', cutoff)
      .executeTakeFirst();
    return row?.last == null ? undefined : Number(row.last);
  }
}

/** Raises each project's pruned mark to the highest id a batch deleted of it (never lowers it: replicas race). */
async function markPruned(trx: Transaction<Database>, marks: { project_id: string; through: unknown }[]): Promise<void> {
  if (marks.length === 0) return;
  await trx
    .insertInto('events_pruned')
    .values(marks.map((mark) => ({ project_id: mark.project_id, through_id: Number(mark.through) })))
    .onConflict((oc) =>
      oc
        .column('project_id')
        .doUpdateSet({ through_id: (eb) => eb.ref('excluded.through_id') })
        .where((eb) => eb('events_pruned.through_id', '<', eb.ref('excluded.through_id'))),
    )
    .execute();
}
