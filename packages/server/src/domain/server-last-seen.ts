// When each server's agent last called: noted in memory on every call and written to the store in
// batches, so that an agent's poll costs no write.
import type { Store } from '../store/store.ts';
import { TaskHealth } from './task-health.ts';

/** The last-seen times of servers, written to the store in batches. */
export class LastSeenWriter {
  /** server id -> last time its agent called, not yet flushed to the store. */
  private readonly seen = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | undefined;
  private readonly flushHealth: TaskHealth;

  constructor(
    private readonly store: Store,
    /** Where failures of the batched writes are reported. */
    logError: (error: unknown) => void,
    /** How often last-seen times are written (default 5 s). */
    private readonly flushMs = 5000,
  ) {
    this.flushHealth = new TaskHealth('last-seen writer', logError);
  }

  /** Notes that a server's agent called; written to the store in batches. */
  touch(serverId: string): void {
    this.seen.set(serverId, Date.now());
    this.flushLater();
  }

  /** Drops what is pending for a server (deleted: a server registered again under its id has not been seen). */
  forget(serverId: string): void {
    this.seen.delete(serverId);
  }

  private flushLater(): void {
    this.flushTimer ??= setTimeout(() => {
      // A failed write (a full disk, the database down) must not end the process: it is reported
      // and retried, the batch kept.
      this.flush().then(
        () => this.flushHealth.succeeded(),
        (error: unknown) => {
          this.flushHealth.failed(error);
          this.flushLater();
        },
      );
    }, this.flushMs).unref();
  }

  /** Writes pending last-seen times; when the write fails they stay pending and it throws. */
  async flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.seen.size === 0) return;
    const batch = [...this.seen];
    this.seen.clear();
    try {
      await this.store.write(async ({ trx }) => {
        for (const [serverId, time] of batch) {
          await trx
            .updateTable('servers')
            .set({ last_seen_at: new Date(time).toISOString() })
            .where('id', '=', serverId)
            .execute();
        }
      });
    } catch (error) {
      // Calls seen meanwhile are newer than the batch's.
      for (const [serverId, time] of batch) if (!this.seen.has(serverId)) this.seen.set(serverId, time);
      throw error;
    }
  }

  /** The last time a server's agent called, including times not flushed yet. */
  lastSeen(serverId: string, stored: string | null): string | null {
    const pending = this.seen.get(serverId);
    return pending === undefined ? stored : new Date(pending).toISOString();
  }
}
