import { heatTime } from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { DeploymentRow } from '../store/schema.ts';
import { topics, type Feed } from '../feed/feed.ts';
import { deploymentEvent } from './deployment-rows.ts';
import { TaskHealth } from './task-health.ts';

/** Why a deployment timed out, in words an operator can act on. */
export function timeoutReason(row: DeploymentRow, serverLastSeen: string | null): string {
  const after = `Timed out after ${row.timeout_s} s`;
  if (!row.fetched_at) {
    const seen = serverLastSeen
      ? `its agent was last seen at ${heatTime(new Date(serverLastSeen))}`
      : 'its agent has never called hearth-server';
    return `${after}: the agent of server ${row.server_id} never fetched this deployment (${seen})`;
  }
  if (!row.last_heartbeat_at) {
    return `${after}: the agent fetched the deployment at ${heatTime(new Date(row.fetched_at))} but never signalled a result`;
  }
  return `${after}: the agent stopped heartbeating; the last heartbeat was at ${heatTime(new Date(row.last_heartbeat_at))}`;
}

/**
 * Fails IN_PROGRESS deployments whose deadline passed. One timer, set for the earliest deadline
 * and re-armed whenever deadlines move; it also re-checks at least every `maxSleepMs`.
 */
export class DeadlineWatcher {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly unsubscribe: () => void;
  private running: Promise<void> | undefined;
  private readonly health: TaskHealth;

  constructor(
    private readonly store: Store,
    feed: Feed,
    private readonly lastSeen: (serverId: string, stored: string | null) => string | null,
    log: (error: unknown) => void,
    private readonly maxSleepMs = 30_000,
  ) {
    this.health = new TaskHealth('deadline sweeper', log);
    this.unsubscribe = feed.subscribe(topics.deadlines, () => this.arm());
  }

  /** Starts watching. */
  start(): void {
    this.stopped = false;
    this.arm();
  }

  /** Stops the timer (pending work finishes). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.unsubscribe();
    await this.running;
  }

  private arm(): void {
    if (this.stopped) return;
    if (this.running) return; // the running sweep re-arms when it ends
    void this.store.reader
      .selectFrom('software_deployments')
      .select((eb) => eb.fn.min('deadline_at').as('next'))
      .where('status', '=', 'IN_PROGRESS')
      .executeTakeFirst()
      .then(
        (row) => {
          const next = row?.next ? Date.parse(row.next) - Date.now() : this.maxSleepMs;
          // While the store fails, a deadline already past is retried with backoff, not at once and forever.
          this.wakeIn(Math.max(next, this.retryDelayMs()));
        },
        (error: unknown) => {
          // Without a timer the watcher would sleep until the next heartbeat: it retries the sweep instead.
          this.health.failed(error);
          this.wakeIn(this.retryDelayMs());
        },
      );
  }

  private wakeIn(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.sweep(), Math.max(0, Math.min(ms, this.maxSleepMs))).unref();
  }

  /** 0 while sweeps work; after failed ones, 1 s doubling up to `maxSleepMs`. */
  private retryDelayMs(): number {
    const failures = this.health.consecutiveFailures;
    return failures === 0 ? 0 : Math.min(this.maxSleepMs, 1000 * 2 ** Math.min(failures - 1, 20));
  }

  /** Fails every expired deployment now. */
  sweep(): Promise<void> {
    this.running ??= this.expire()
      .then(
        () => this.health.succeeded(),
        (error: unknown) => this.health.failed(error),
      )
      .finally(() => {
        this.running = undefined;
        this.arm();
      });
    return this.running;
  }

  private async expire(): Promise<void> {
    await this.store.write(async ({ trx, now, event, publish }) => {
      const expired = await trx
        .selectFrom('software_deployments')
        .selectAll()
        .where('status', '=', 'IN_PROGRESS')
        .where('deadline_at', '<=', now)
        .limit(500)
        .execute();
      for (const row of expired) {
        const server = await trx.selectFrom('servers').select('last_seen_at').where('id', '=', row.server_id).executeTakeFirst();
        const reason = timeoutReason(row, this.lastSeen(row.server_id, server?.last_seen_at ?? null));
        await trx
          .updateTable('software_deployments')
          .set({ status: 'FAILED', status_reason: reason, deadline_at: null, updated_at: now })
          .where('id', '=', row.id)
          .where('status', '=', 'IN_PROGRESS')
          .execute();
        event(deploymentEvent(row, 'deployment.timed_out', reason, { timeout: row.timeout_s }));
        publish(topics.deployment(row.id));
      }
    });
  }
}
