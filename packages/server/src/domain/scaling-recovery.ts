// After a start, what a member_bootstrap change left unfinished (its process killed between its
// writes) is recovered without waiting for the group's next change: at once where no lease holds the
// group or it lapsed, else by a timer set at the lapse of the lease that holds it (SCALING_LEASE_MS
// after the dead process took it). A change that really runs (another replica on the same
// PostgreSQL) renews its lease while it makes its members, so the timer finds it held and waits for
// its new end; once the change is done there is nothing left to recover. With nothing held it looks
// again once a lease length later: a replica that crashed and never comes back leaves its reservations
// to the others, which did not restart.
import type { Store } from '../store/store.ts';
import { MEMBER_JOINING } from './scaling-bootstrap.ts';
import { SCALING_LEASE_MS } from './scaling-change.ts';
import { TaskHealth, TaskNotice } from './task-health.ts';

/** Waited after a lease's end before looking again, so that the lease has lapsed by this clock too. */
const LAPSE_MARGIN_MS = 100;
/** Least wait between two passes (a lease that lapsed between a pass's two reads). */
const MIN_WAIT_MS = 1000;
/** Wait before a pass that failed (store unavailable) is tried again. */
const RETRY_MS = 5000;

/** What the recovery calls: deletes the records of reservations no live change holds; returns how many. */
export type RecoverLeftovers = (groupId: string | undefined, cause: string) => Promise<number>;

/** Recovers the member records unfinished changes left: at start, at each lapse of a lease holding some, else every idleMs. */
export class ScalingRecovery {
  private timer: NodeJS.Timeout | undefined;
  private passing: Promise<void> | undefined;
  private stopped = true;
  private readonly health: TaskHealth;

  constructor(
    private readonly store: Store,
    private readonly recover: RecoverLeftovers,
    private readonly log: (error: unknown) => void,
    /** With no lease holding reserved members, the wait before the next look (one cheap read). */
    private readonly idleMs = SCALING_LEASE_MS,
  ) {
    this.health = new TaskHealth('scaling recovery', log);
  }

  /** Starts: a pass now, one more at each lapse of a lease that holds reserved members then, else after idleMs. */
  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Stops the timer and waits for a pass under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.passing;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.passing ??= this.pass().finally(() => (this.passing = undefined));
    }, ms).unref();
  }

  private async pass(): Promise<void> {
    let next: number | undefined;
    try {
      const count = await this.recover(undefined, 'without waiting for a change of the group');
      if (count > 0)
        this.log(
          new TaskNotice(`scaling recovery deleted ${count} member record(s) that unfinished changes left outside their groups`, 'info', {
            task: 'scaling recovery',
            count,
          }),
        );
      next = await this.nextLapse();
      this.health.succeeded();
    } catch (error) {
      this.health.failed(error);
      this.schedule(RETRY_MS);
      return;
    }
    this.schedule(next === undefined ? this.idleMs : Math.max(MIN_WAIT_MS, next - Date.now() + LAPSE_MARGIN_MS));
  }

  /** When the first lease that holds reserved members ends (ms since the epoch), or undefined when none does. */
  private async nextLapse(): Promise<number | undefined> {
    const row = await this.store.reader
      .selectFrom('scaling_members as m')
      .innerJoin('scaling_groups as g', 'g.id', 'm.group_id')
      .select((eb) => eb.fn.min('g.scaling_lease_until').as('until'))
      .where('m.bootstrap', '=', MEMBER_JOINING)
      .where('g.scaling_lease_until', 'is not', null)
      .executeTakeFirst();
    return row?.until ? Date.parse(row.until) : undefined;
  }
}
