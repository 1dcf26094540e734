import { performance } from 'node:perf_hooks';
import { heatTime } from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { ExpressionBuilder } from 'kysely';
import type { Database, DeploymentRow } from '../store/schema.ts';
import type { WriteContext } from '../store/write-queue.ts';
import { topics, type Feed } from '../feed/feed.ts';
import { deploymentEvent } from './deployment-rows.ts';
import { TaskHealth } from './task-health.ts';

/** Why a deployment timed out, for scripts: the `cause` of its deployment.timed_out event's data. */
export type TimeoutCause = 'never_fetched' | 'never_signalled' | 'heartbeats_stopped';

/** Which of timeoutReason's three cases a deployment is. */
export function timeoutCause(row: Pick<DeploymentRow, 'fetched_at' | 'last_heartbeat_at'>): TimeoutCause {
  if (!row.fetched_at) return 'never_fetched';
  return row.last_heartbeat_at ? 'heartbeats_stopped' : 'never_signalled';
}

/** Why a deployment timed out, in words an operator can act on. */
export function timeoutReason(
  row: Pick<DeploymentRow, 'server_id' | 'timeout_s' | 'fetched_at' | 'last_heartbeat_at'>,
  serverLastSeen: string | null,
): string {
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
 * Most deployments failed in one transaction. A mass expiry (a fleet deployed at once, a restart
 * after an outage) is swept in batches this size, and requests and signals are served between
 * them: on SQLite a batch holds the event loop, on PostgreSQL the cluster-wide write lock.
 */
const EXPIRE_BATCH = 200;

/** One IN_PROGRESS deployment to fail, with its reason and the event that says why. */
export interface DeploymentFailure {
  row: Pick<DeploymentRow, 'id' | 'project_id' | 'server_id'>;
  /** Its status_reason, and the event's message. */
  reason: string;
  type: 'deployment.timed_out' | 'deployment.failed';
  data: Record<string, unknown>;
}

/**
 * Fails deployments in the caller's write transaction, as a deadline does: FAILED with each one's
 * reason, no deadline, an event each and its topic published. Only those still IN_PROGRESS change
 * (one settled meanwhile keeps its result). Returns the ids it failed.
 */
export async function failDeployments({ trx, now, event, publish }: WriteContext, failures: DeploymentFailure[]): Promise<Set<string>> {
  const changed = new Set<string>();
  for (let start = 0; start < failures.length; start += EXPIRE_BATCH) {
    // At most a sweep's batch per statement: a server deleted with thousands stays within SQLite's parameter limit.
    const batch = failures.slice(start, start + EXPIRE_BATCH);
    const ids = batch.map((failure) => failure.row.id);
    // One statement for the batch: on PostgreSQL a statement per row was a round trip each under
    // the write lock, and 30,000 due deployments took 21 s while signals waited up to 1 s.
    const failed = await trx
      .updateTable('software_deployments')
      .set((eb) => {
        let reason = eb.case('id').when(batch[0]!.row.id).then(batch[0]!.reason);
        for (const failure of batch.slice(1)) reason = reason.when(failure.row.id).then(failure.reason);
        return { status: 'FAILED', status_reason: reason.end(), deadline_at: null, updated_at: now };
      })
      .where('id', 'in', ids)
      .where('status', '=', 'IN_PROGRESS')
      .returning('id')
      .execute();
    for (const row of failed) changed.add(row.id);
  }
  // An event for each row the statements changed, and only those.
  for (const failure of failures) {
    if (!changed.has(failure.row.id)) continue;
    event(deploymentEvent(failure.row, failure.type, failure.reason, failure.data));
    publish(topics.deployment(failure.row.id));
  }
  return changed;
}

/**
 * How long after it starts hearth-server holds the deadlines that passed while it was not running:
 * longer than the longest wait between an agent's retries (heat-config-notify's cap, 5 min), so a
 * result an agent queued during the outage arrives before its deployment is failed for silence.
 */
export const RESTART_GRACE_MS = 6 * 60_000;

/**
 * While the restart grace lasts (the process started at `startedIso`), the deployments whose deadline
 * may be enforced: it passed after the start, and the deployment was heard from since (a new action, a
 * fetch or a heartbeat after the start). The rest wait for the grace to end.
 */
function notHeld(startedIso: string) {
  return (eb: ExpressionBuilder<Database, 'software_deployments'>) =>
    eb.and([
      eb('deadline_at', '>=', startedIso),
      eb.or([eb('derived_at', '>=', startedIso), eb('fetched_at', '>=', startedIso), eb('last_heartbeat_at', '>=', startedIso)]),
    ]);
}

/**
 * Fails IN_PROGRESS deployments whose deadline passed. One timer, set for the earliest deadline
 * and re-armed whenever deadlines move; it also re-checks at least every `maxSleepMs`. Deadlines
 * that passed before this process started wait `restartGraceMs` after the start, and so do those
 * that pass during the grace on a deployment not heard from since the start: its agent's heartbeat
 * or result may have failed while hearth-server was down, and its retry is still to come.
 */
export class DeadlineWatcher {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly unsubscribe: () => void;
  private running: Promise<void> | undefined;
  private readonly health: TaskHealth;
  private startedAt = Date.now();
  /** `startedAt` on the monotonic clock: the grace is a duration, which a step of the wall clock must not stretch. */
  private startedMonotonicMs = performance.now();

  constructor(
    private readonly store: Store,
    feed: Feed,
    private readonly lastSeen: (serverId: string, stored: string | null) => string | null,
    log: (error: unknown) => void,
    private readonly maxSleepMs = 30_000,
    private readonly restartGraceMs = RESTART_GRACE_MS,
  ) {
    this.health = new TaskHealth('deadline sweeper', log);
    this.unsubscribe = feed.subscribe(topics.deadlines, () => this.arm());
  }

  /** Starts watching. */
  start(): void {
    this.stopped = false;
    this.startedAt = Date.now();
    this.startedMonotonicMs = performance.now();
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
    const held = this.heldBefore();
    void this.store.reader
      .selectFrom('software_deployments')
      .select((eb) => eb.fn.min('deadline_at').as('next'))
      .where('status', '=', 'IN_PROGRESS')
      .$if(held !== undefined, (qb) => qb.where(notHeld(held!)))
      .executeTakeFirst()
      .then(
        (row) => {
          let next = row?.next ? Date.parse(row.next) - Date.now() : this.maxSleepMs;
          if (held !== undefined) next = Math.min(next, this.graceLeftMs());
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

  /**
   * While the restart grace lasts, the start time (ISO): deadlines before it passed while hearth-server
   * was not running and are held. Undefined once the grace is over.
   */
  private heldBefore(): string | undefined {
    return this.graceLeftMs() > 0 ? new Date(this.startedAt).toISOString() : undefined;
  }

  /**
   * What is left of the restart grace, on the monotonic clock: measured on the wall clock, a step back
   * (NTP at boot) made the grace, and the deadlines it holds, last as long as the step.
   */
  private graceLeftMs(): number {
    return this.startedMonotonicMs + this.restartGraceMs - performance.now();
  }

  /** 0 while sweeps work; after failed ones, 1 s doubling up to `maxSleepMs`. */
  private retryDelayMs(): number {
    const failures = this.health.consecutiveFailures;
    return failures === 0 ? 0 : Math.min(this.maxSleepMs, 1000 * 2 ** Math.min(failures - 1, 20));
  }

  /** Fails expired deployments now, a batch at a time (the watcher re-arms at once for the rest). */
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
    await this.store.write(async (ctx) => {
      const { trx, now } = ctx;
      const held = this.heldBefore();
      const startedAt = new Date(this.startedAt).toISOString();
      /** Whether the deadline passed before this process started (and so was held for the restart grace). */
      const downAtDeadline = (row: { deadline_at: string | null }) =>
        this.restartGraceMs > 0 && row.deadline_at !== null && row.deadline_at < startedAt;
      /** Whether it was held for the grace because nothing was heard of it since the start (see notHeld). */
      const silentSinceStart = (row: Pick<DeploymentRow, 'deadline_at' | 'derived_at' | 'fetched_at' | 'last_heartbeat_at'>) =>
        this.restartGraceMs > 0 &&
        row.deadline_at !== null &&
        row.deadline_at < new Date(this.startedAt + this.restartGraceMs).toISOString() &&
        [row.derived_at, row.fetched_at, row.last_heartbeat_at].every((at) => at === null || at < startedAt);
      const expired = await trx
        .selectFrom('software_deployments')
        .select(['id', 'project_id', 'server_id', 'timeout_s', 'fetched_at', 'last_heartbeat_at', 'deadline_at', 'derived_at'])
        .where('status', '=', 'IN_PROGRESS')
        .where('deadline_at', '<=', now)
        .$if(held !== undefined, (qb) => qb.where(notHeld(held!)))
        .limit(EXPIRE_BATCH)
        .execute();
      if (expired.length === 0) return;
      const serverIds = [...new Set(expired.map((row) => row.server_id))];
      const servers = await trx.selectFrom('servers').select(['id', 'last_seen_at']).where('id', 'in', serverIds).execute();
      const stored = new Map(servers.map((server) => [server.id, server.last_seen_at]));
      const reasons = new Map(
        expired.map((row) => {
          const reason = timeoutReason(row, this.lastSeen(row.server_id, stored.get(row.server_id) ?? null));
          // Said, so that nobody looks for a fault on the VM first.
          const waited = `it waited ${Math.round(this.restartGraceMs / 1000)} s after starting for a late result`;
          const outage = downAtDeadline(row)
            ? ` (hearth-server was not running when the deadline passed; ${waited})`
            : silentSinceStart(row)
              ? ` (hearth-server restarted while it ran; ${waited})`
              : '';
          return [row.id, `${reason}${outage}`];
        }),
      );
      await failDeployments(
        ctx,
        expired.map((row) => ({
          row,
          reason: reasons.get(row.id)!,
          type: 'deployment.timed_out',
          // The cause as a code too: `hearth events --json` readers should not have to parse the sentence.
          data: { timeout: row.timeout_s, cause: timeoutCause(row), server_was_down: downAtDeadline(row) },
        })),
      );
    });
  }
}
