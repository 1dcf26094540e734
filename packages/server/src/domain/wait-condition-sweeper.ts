// The wait conditions' timer: every half second it fails the IN_PROGRESS conditions whose deadline
// passed, each in its own write unit, with Heat's reason (how many of the expected signals arrived).
// Those the restart grace holds (wait-condition-grace.ts) wait for the grace to end.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Store } from '../store/store.ts';
import { timeOut } from './wait-condition-writes.ts';
import { WaitConditionGrace } from './wait-condition-grace.ts';
import { TaskHealth } from './task-health.ts';

/** Due conditions read at a time. */
const DUE_PAGE = 500;
/**
 * Conditions whose writes are queued together, so they share one group commit; between chunks the
 * sweeper yields, so requests and signals get in. Writes awaited one after another each waited for
 * their own commit and, on SQLite, never let the event loop turn in between (the write queue runs a
 * unit queued from a commit's callback at once): 10,000 due conditions took 27 s to fail and held
 * the server for up to 3.6 s at a time (test/bench/tools/deadline-sweep.ts).
 */
const CHUNK = 50;
/** Pages one sweep takes at most before it leaves the rest to the next tick. */
const MAX_PAGES = 20;

/** Fails wait conditions whose deadline passed, with Heat's timeout reason. */
export class WaitConditionSweeper {
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private stopping = false;
  private readonly health: TaskHealth;

  constructor(
    private readonly store: Store,
    logError: (error: unknown) => void,
    /** Holds, after a restart, the deadlines of conditions created before it (default: a grace from now). */
    private readonly grace = new WaitConditionGrace(),
  ) {
    this.health = new TaskHealth('wait-condition sweeper', logError);
  }

  /** Starts failing conditions whose deadline passed (checked every `everyMs`). */
  start(everyMs = 500): void {
    this.stopping = false;
    this.sweeper ??= setInterval(() => {
      this.sweeping ??= this.expireDue()
        .then(
          () => this.health.succeeded(),
          (error: unknown) => this.health.failed(error),
        )
        .finally(() => (this.sweeping = undefined));
    }, everyMs).unref();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.sweeping;
  }

  /** Fails every IN_PROGRESS condition past its deadline with Heat's timeout reason; returns how many it looked at. */
  async expireDue(): Promise<number> {
    let seen = 0;
    // A full page means more may be due: the next one is read at once rather than a tick later.
    for (let page = 0; page < MAX_PAGES && !this.stopping; page++) {
      const now = new Date().toISOString();
      const due = await this.store.reader
        .selectFrom('wait_conditions')
        .select('id')
        .where('status', '=', 'IN_PROGRESS')
        .where('deadline_at', '<=', now)
        // During the grace a due deadline is before its end: the grace holds those of conditions created before the start.
        .$if(this.grace.lasts(now), (qb) => qb.where('created_at', '>=', this.grace.startedAt))
        .limit(DUE_PAGE)
        .execute();
      for (let from = 0; from < due.length && !this.stopping; from += CHUNK) {
        // Every write of the chunk settles before the sweep goes on (or reports the first failure).
        const outcomes = await Promise.allSettled(due.slice(from, from + CHUNK).map(({ id }) => this.expire(id)));
        const failed = outcomes.find((outcome) => outcome.status === 'rejected');
        if (failed) throw failed.reason;
        await nextTurn();
      }
      seen += due.length;
      if (due.length < DUE_PAGE) break;
    }
    return seen;
  }

  /** Fails one condition if it is still IN_PROGRESS and timed out (past its deadline, not held by the restart grace). */
  private expire(id: string): Promise<void> {
    return this.store.write(async (ctx) => {
      const current = await ctx.trx.selectFrom('wait_conditions').selectAll().where('id', '=', id).executeTakeFirst();
      if (!current || current.status !== 'IN_PROGRESS' || !this.grace.timedOut(current, ctx.now)) return;
      const signals = await ctx.trx
        .selectFrom('wait_condition_signals')
        .select(['status', 'reason'])
        .where('wait_condition_id', '=', id)
        .execute();
      await timeOut(ctx, current, signals, this.grace);
    });
  }
}
