// One attempt on one queued entry, and its bookkeeping on disk: delivered or rejected entries are
// removed, a failed attempt records attempts + next attempt time (full-jitter backoff) in the
// entry's file, and an entry past its deadline (by the server's clock and by this VM's) is dropped. Each step is logged without secrets.
import type { Logger } from '@hearth/agent-kit';
import { backoffDelayMs, DEFAULT_BACKOFF, type BackoffPolicy } from './backoff.ts';
import { isCannotWrite, routeOrigin, type Outbox, type OutboxEntry } from './outbox.ts';
import { deliverEntry, type DeliveryOptions } from './transports.ts';

/** What became of an entry after an attempt (or a look at it). */
export type AttemptResult =
  | { state: 'delivered'; status: number }
  | { state: 'rejected'; status: number; reason: string }
  | { state: 'expired' }
  | { state: 'queued'; nextAttemptAt: number; reason: string }
  | { state: 'busy' }
  | { state: 'gone' };

/** What an attempt needs besides the entry. */
export interface AttemptContext extends DeliveryOptions {
  outbox: Outbox;
  log: Logger;
  /** Backoff between attempts. Default 1 s doubling, capped at 5 min. */
  backoff?: BackoffPolicy;
  /** The clock, in epoch ms. Default Date.now. */
  now?: () => number;
  /** Uniform random in [0, 1). Default Math.random. */
  random?: () => number;
  /** How long past its deployment's deadline an undelivered signal is still retried. Default DEFAULT_LATE_MS. */
  lateMs?: number;
}

/**
 * How long past the deployment's deadline a signal that could not be delivered is still retried (1 h).
 * hearth-server holds deadlines that passed while it was not running for a while after it starts, so
 * a result queued during an outage of the control plane still completes its deployment; a server that
 * has given up answers 409, which ends the retries at once.
 */
export const DEFAULT_LATE_MS = 60 * 60_000;

/** Fields that say which signal a log line is about (no route: it holds credentials). */
export function entryFields(entry: OutboxEntry): Record<string, unknown> {
  return { entry: entry.id, deployment: entry.deploymentId, transport: entry.route.transport, attempts: entry.attempts };
}

/** Removes a settled entry; a disk that takes no writes leaves it for a later pass, where the server answers a duplicate. */
function forget(ctx: AttemptContext, entry: OutboxEntry): void {
  try {
    ctx.outbox.remove(entry.id);
  } catch (error) {
    if (!isCannotWrite(error)) throw error;
    ctx.log.warn('could not remove a settled entry from the outbox (read-only disk)', {
      ...entryFields(entry),
      error: (error as Error).message,
    });
  }
}

/**
 * Whether a tried entry is past retrying: `lateMs` past the deadline (the server's clock) AND queued on
 * this VM longer than the timeout + `lateMs` ago by its own clock. A VM clock far ahead of the server's
 * (booted wrong, before NTP) thus still retries for the deployment's whole time, not once.
 */
function isExpired(entry: OutboxEntry, nowMs: number, lateMs: number): boolean {
  if (entry.attempts === 0 || !(nowMs > Date.parse(entry.deadline) + lateMs)) return false;
  const queuedAt = Date.parse(entry.createdAt);
  // Entries of older versions carry no timeout: the time from queueing to the deadline, as they were judged.
  const timeoutMs = entry.timeoutMs ?? Math.max(0, Date.parse(entry.deadline) - queuedAt);
  return nowMs - queuedAt > timeoutMs + lateMs;
}

/**
 * Makes one attempt on the entry `id` while holding its lock, and records the outcome. An expired
 * entry (isExpired) is dropped, unless it was never tried: the first attempt is always made, since
 * heartbeats may have moved the server's deadline past the one computed here.
 */
export async function attemptEntry(id: string, ctx: AttemptContext): Promise<AttemptResult> {
  const { outbox, log } = ctx;
  const now = ctx.now ?? Date.now;
  const lock = await outbox.lock(id);
  if (!lock) return { state: 'busy' };
  try {
    const entry = outbox.read(id);
    if (!entry) return { state: 'gone' };
    const fields = entryFields(entry);
    if (isExpired(entry, now(), ctx.lateMs ?? DEFAULT_LATE_MS)) {
      forget(ctx, entry);
      log.error('dropping a signal that was never acknowledged: the deployment deadline has passed', {
        ...fields,
        deadline: entry.deadline,
        lastError: entry.lastError,
      });
      return { state: 'expired' };
    }
    const outcome = await deliverEntry(entry, ctx);
    const attempts = entry.attempts + 1;
    if (outcome.result === 'delivered') {
      ctx.outbox.markAnswered(routeOrigin(entry.route), now(), entry.id);
      forget(ctx, entry);
      log.info('signal delivered', { ...fields, attempts, status: outcome.status, reply: outcome.detail });
      return { state: 'delivered', status: outcome.status };
    }
    if (outcome.result === 'rejected') {
      ctx.outbox.markAnswered(routeOrigin(entry.route), now(), entry.id);
      forget(ctx, entry);
      log.error('signal rejected; it will not be sent again', { ...fields, attempts, status: outcome.status, reason: outcome.reason });
      return { state: 'rejected', status: outcome.status, reason: outcome.reason };
    }
    const delay = backoffDelayMs(attempts, ctx.backoff ?? DEFAULT_BACKOFF, ctx.random, outcome.retryAfterMs);
    const nowMs = now();
    const nextAttemptAt = nowMs + delay;
    // The clock went back past the queueing time: the VM's count starts again now, or the entry would be kept until the clock
    // caught up (years, after a clock booted that far ahead).
    const createdAt = Date.parse(entry.createdAt) > nowMs ? new Date(nowMs).toISOString() : entry.createdAt;
    try {
      await outbox.save({
        ...entry,
        createdAt,
        attempts,
        nextAttemptAt: new Date(nextAttemptAt).toISOString(),
        lastError: outcome.reason,
        lastAttemptAt: new Date(nowMs).toISOString(),
        retryAfterAt: outcome.retryAfterMs === undefined ? undefined : new Date(nowMs + outcome.retryAfterMs).toISOString(),
      });
    } catch (error) {
      if (!isCannotWrite(error)) throw error;
      // The entry stays queued with its old state; the caller waits nextAttemptAt all the same.
      log.warn('could not record the attempt in the outbox (disk full or read-only)', { ...fields, error: (error as Error).message });
    }
    log.warn('signal not delivered; queued for another attempt', {
      ...fields,
      attempts,
      reason: outcome.reason,
      retryInMs: delay,
    });
    return { state: 'queued', nextAttemptAt, reason: outcome.reason };
  } finally {
    await lock.release();
  }
}
