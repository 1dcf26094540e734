// The wait conditions' timer: every half second it fails the IN_PROGRESS conditions whose deadline
// passed, each in its own write, with Heat's reason (how many of the expected signals arrived).
import type { Store } from '../store/store.ts';
import { timeOut } from './wait-conditions.ts';
import { TaskHealth } from './task-health.ts';

/** Fails wait conditions whose deadline passed, with Heat's timeout reason. */
export class WaitConditionSweeper {
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;
  private readonly health: TaskHealth;

  constructor(
    private readonly store: Store,
    logError: (error: unknown) => void,
  ) {
    this.health = new TaskHealth('wait-condition sweeper', logError);
  }

  /** Starts failing conditions whose deadline passed (checked every `everyMs`). */
  start(everyMs = 500): void {
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
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    await this.sweeping;
  }

  /** Fails every IN_PROGRESS condition past its deadline with Heat's timeout reason. */
  async expireDue(): Promise<number> {
    const nowIso = new Date().toISOString();
    const due = await this.store.reader
      .selectFrom('wait_conditions')
      .select('id')
      .where('status', '=', 'IN_PROGRESS')
      .where('deadline_at', '<=', nowIso)
      .limit(500)
      .execute();
    for (const { id } of due) {
      await this.store.write(async (ctx) => {
        const current = await ctx.trx.selectFrom('wait_conditions').selectAll().where('id', '=', id).executeTakeFirst();
        if (!current || current.status !== 'IN_PROGRESS' || current.deadline_at > ctx.now) return;
        const signals = await ctx.trx
          .selectFrom('wait_condition_signals')
          .select(['status', 'reason'])
          .where('wait_condition_id', '=', id)
          .execute();
        await timeOut(ctx, current, signals);
      });
    }
    return due.length;
  }
}
