// The wait conditions' timer: every half second it fails the IN_PROGRESS conditions whose deadline
// passed, each in its own write, with Heat's reason (how many of the expected signals arrived).
import type { Store } from '../store/store.ts';
import { topics } from '../feed/feed.ts';
import { timeoutReason } from './wait-condition-rules.ts';
import { waitConditionEvent } from './wait-conditions.ts';

/** Fails wait conditions whose deadline passed, with Heat's timeout reason. */
export class WaitConditionSweeper {
  private sweeper: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly store: Store,
    private readonly logError: (error: unknown) => void,
  ) {}

  /** Starts failing conditions whose deadline passed (checked every `everyMs`). */
  start(everyMs = 500): void {
    this.sweeper ??= setInterval(() => {
      this.sweeping ??= this.expireDue()
        .then(() => undefined, this.logError)
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
      await this.store.write(async ({ trx, now, event, publish }) => {
        const current = await trx.selectFrom('wait_conditions').selectAll().where('id', '=', id).executeTakeFirst();
        if (!current || current.status !== 'IN_PROGRESS' || current.deadline_at > now) return;
        const signals = await trx
          .selectFrom('wait_condition_signals')
          .select(['status', 'reason'])
          .where('wait_condition_id', '=', id)
          .execute();
        const reason = timeoutReason(current, signals);
        await trx
          .updateTable('wait_conditions')
          .set({ status: 'FAILED', status_reason: reason, generation: current.generation + 1, updated_at: now })
          .where('id', '=', id)
          .execute();
        event(waitConditionEvent(current, 'wait_condition.failed', reason));
        publish(topics.waitCondition(id));
      });
    }
    return due.length;
  }
}
