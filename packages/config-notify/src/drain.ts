// Delivering what is queued: one pass over the due entries (`--drain --once`), passes until the
// outbox is empty (`--drain`), or forever, woken by new entries (`--drain --follow`, the daemon).
import { watch, type FSWatcher } from 'node:fs';
import { attemptEntry, type AttemptContext, type AttemptResult } from './attempt.ts';
import { DEFAULT_BACKOFF } from './backoff.ts';
import { routeOrigin, type OutboxEntry } from './outbox.ts';
import { setLongTimeout } from '@hearth/agent-kit/long-timer';

/** How long drainOutbox keeps going. */
export type DrainMode = 'once' | 'empty' | 'follow';

/** Options of drainOutbox. */
export interface DrainOptions {
  /** Default 'empty'. */
  mode?: DrainMode;
  /** Ends the drain after the attempt in flight. */
  stop?: AbortSignal;
  /** In follow mode, look at the directory at least this often even without a change event, in ms. Default 30000. */
  rescanMs?: number;
}

/** Counts of what a drain did. */
export interface DrainSummary {
  delivered: number;
  rejected: number;
  expired: number;
  /** Entries still queued when the drain ended. */
  queued: number;
  /** Entry files that could not be read when the drain ended (left in place, never sent). */
  unreadable: number;
}

/** Sleeps `ms` (any length: `--retry-cap-ms` may be weeks) unless `stop` fires or `wake` resolves first. */
async function pause(ms: number, stop: AbortSignal | undefined, wake?: Promise<void>): Promise<void> {
  let cancel = (): void => undefined;
  let onStop = (): void => undefined;
  const slept = new Promise<void>((resolve) => {
    cancel = setLongTimeout(resolve, Math.max(0, ms));
    onStop = resolve;
  });
  stop?.addEventListener('abort', onStop, { once: true });
  try {
    if (!stop?.aborted) await Promise.race([slept, ...(wake ? [wake] : [])]);
  } finally {
    cancel();
    stop?.removeEventListener('abort', onStop);
  }
}

/** A promise that resolves at the next change in the directory (a new entry), renewed by `next()`. */
function dirWatcher(dir: string): { next(): Promise<void>; close(): void } {
  let wake: () => void = () => undefined;
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dir, () => wake());
    watcher.on('error', () => undefined);
  } catch {
    watcher = undefined; // no inotify: the rescan interval still finds new entries
  }
  return {
    next: () => new Promise<void>((resolve) => (wake = resolve)),
    close: () => watcher?.close(),
  };
}

/**
 * Whether an entry waiting out its backoff is due anyway: its server answered another signal (from this
 * drain or another process: Outbox.markAnswered) after this entry's last failed attempt, so it is up
 * again. The server's own Retry-After is still honoured. `triedAt`: when this drain last tried it.
 */
function answeredSince(ctx: AttemptContext, entry: OutboxEntry, triedAt: number | undefined, nowMs: number): boolean {
  if (entry.attempts === 0) return false;
  if (entry.retryAfterAt !== undefined && Date.parse(entry.retryAfterAt) > nowMs) return false;
  const lastTried = Math.max(Date.parse(entry.lastAttemptAt ?? entry.createdAt), triedAt ?? -Infinity);
  return ctx.outbox.answeredAt(routeOrigin(entry.route)) > lastTried;
}

function count(summary: DrainSummary, result: AttemptResult): void {
  if (result.state === 'delivered') summary.delivered += 1;
  else if (result.state === 'rejected') summary.rejected += 1;
  else if (result.state === 'expired') summary.expired += 1;
}

/** Delivers queued signals as the mode says; resolves with what it did. */
export async function drainOutbox(ctx: AttemptContext, options: DrainOptions = {}): Promise<DrainSummary> {
  const mode = options.mode ?? 'empty';
  const now = ctx.now ?? Date.now;
  const capMs = (ctx.backoff ?? DEFAULT_BACKOFF).capMs;
  const summary: DrainSummary = { delivered: 0, rejected: 0, expired: 0, queued: 0, unreadable: 0 };
  const reported = new Set<string>();
  // When each entry this drain retried is due: its file says so too, unless the disk took no write.
  const notBefore = new Map<string, number>();
  // When this drain last tried each entry: an entry whose file kept no record of it (a full disk) is not pulled forward twice.
  const triedAt = new Map<string, number>();
  ctx.outbox.ensureDir();
  const watcher = mode === 'follow' ? dirWatcher(ctx.outbox.dir) : undefined;
  try {
    for (;;) {
      const changed = watcher?.next();
      const { entries, unreadable } = ctx.outbox.list();
      summary.unreadable = unreadable.length;
      for (const bad of unreadable) {
        if (!reported.has(bad.file)) ctx.log.error('cannot read an outbox entry; leaving it for an operator', { ...bad });
        reported.add(bad.file);
      }
      const listed = new Set(entries.map((entry) => entry.id));
      for (const id of notBefore.keys()) if (!listed.has(id)) notBefore.delete(id); // settled elsewhere
      for (const id of triedAt.keys()) if (!listed.has(id)) triedAt.delete(id);
      let nextDue = Infinity;
      let remaining = 0;
      // A server answered in this pass: the entries skipped before it may be due now (answeredSince).
      let answered = false;
      for (const [index, entry] of entries.entries()) {
        if (options.stop?.aborted) {
          remaining += entries.length - index; // not attempted: still queued
          break;
        }
        const at = Math.max(Date.parse(entry.nextAttemptAt), notBefore.get(entry.id) ?? -Infinity);
        // An attempt time further away than the cap means the clock went back (or a bad file): try now.
        let due = !(at > now()) || at - now() > capMs;
        if (!due && answeredSince(ctx, entry, triedAt.get(entry.id), now())) {
          due = true;
          ctx.log.info('its server answered another signal since: trying this one again now', {
            entry: entry.id,
            deployment: entry.deploymentId,
            attempts: entry.attempts,
          });
        }
        if (!due) {
          remaining += 1;
          nextDue = Math.min(nextDue, at);
          continue;
        }
        triedAt.set(entry.id, now());
        const result = await attemptEntry(entry.id, ctx);
        count(summary, result);
        if (result.state === 'delivered' || result.state === 'rejected') answered = true;
        notBefore.delete(entry.id);
        if (result.state === 'queued') {
          remaining += 1;
          nextDue = Math.min(nextDue, result.nextAttemptAt);
          notBefore.set(entry.id, result.nextAttemptAt);
        } else if (result.state === 'busy') {
          remaining += 1;
          nextDue = Math.min(nextDue, now() + 1000);
        }
      }
      summary.queued = remaining;
      if (remaining === 0) ctx.outbox.clearAnswered();
      if (options.stop?.aborted || mode === 'once') return summary;
      if (mode === 'empty' && remaining === 0) return summary;
      if (answered && remaining > 0) continue;
      const rescan = mode === 'follow' ? (options.rescanMs ?? 30_000) : Infinity;
      await pause(Math.min(nextDue - now(), rescan), options.stop, changed);
    }
  } finally {
    watcher?.close();
  }
}

/**
 * Attempts one entry until it is settled (delivered, rejected or expired), sleeping between
 * attempts as its backoff says (`heat-config-notify --wait`). Resolves with the final result, or
 * the last `queued` result when `stop` fires first.
 */
export async function deliverUntilSettled(id: string, ctx: AttemptContext, stop?: AbortSignal): Promise<AttemptResult> {
  const now = ctx.now ?? Date.now;
  for (;;) {
    const result = await attemptEntry(id, ctx);
    if (result.state !== 'queued' && result.state !== 'busy') return result;
    if (stop?.aborted) return result;
    await pause(result.state === 'queued' ? result.nextAttemptAt - now() : 1000, stop);
    if (stop?.aborted) return result;
  }
}
