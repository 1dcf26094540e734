import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import cron, { type ScheduledTask } from 'node-cron';
import type { AlarmState, ComparisonOperator, MetricDimensions, MetricStatistic } from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database } from '../store/schema.ts';
import type { AlarmRow } from '../store/schema-metrics-alarms.ts';
import { ALARM_EVALUATOR_LEASE, LEASE_RELEASED } from '../store/migrations/0004_metrics_alarms.ts';
import { decide, windowStartMs, type AlarmRule, type Decision } from './alarm-rules.ts';
import type { MetricService } from './metrics.ts';
import { alarmEvent } from './alarms.ts';
import { actionsFor, enqueueDeliveries, notificationOf, type AlarmActionDeliverer } from './alarm-actions.ts';
import { TaskHealth } from './task-health.ts';

/** When and how the evaluator runs. */
export interface EvaluatorOptions {
  /** node-cron expression (six fields = with seconds); default every 10 s: `*\/10 * * * * *`. */
  schedule: string;
  /** How long a lease lasts without renewal; default 30 s (at least a few runs, so one slow run does not lose it). */
  leaseSeconds: number;
  /** This process's id in the lease row; default `<hostname>:<pid>:<random>`. */
  holderId: string;
  /** State changes kept per alarm, the newest (older ones are deleted); default ALARM_HISTORY_KEPT. */
  historyKept: number;
}

/** State changes kept per alarm: the most its history API shows. A flapping alarm must not grow its history for ever. */
export const ALARM_HISTORY_KEPT = 1000;

/** Evaluator defaults, in one place. */
export function defaultEvaluatorOptions(): EvaluatorOptions {
  return {
    schedule: '*/10 * * * * *',
    leaseSeconds: 30,
    holderId: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    historyKept: ALARM_HISTORY_KEPT,
  };
}

/** What one run did. */
export interface EvaluationRun {
  /** False when another process holds the lease (this one did nothing). */
  leader: boolean;
  evaluated: number;
  changed: number;
  /** Alarms whose actions were queued again because they stayed in their state (repeat_actions). */
  repeated: number;
  pruned: number;
  delivered: number;
}

/** The rule of a stored alarm. */
export function ruleOf(row: AlarmRow): AlarmRule {
  return {
    statistic: row.statistic as MetricStatistic,
    comparisonOperator: row.comparison_operator as ComparisonOperator,
    threshold: Number(row.threshold),
    periodSeconds: row.period_s,
    evaluationPeriods: row.evaluation_periods,
  };
}

/**
 * Whether an alarm with repeat_actions is due to queue its actions again at `nowMs`: a whole period
 * has passed since they were last queued (or since it entered its state, for a row from before
 * repeats were kept). Counted in whole seconds, as the schedule runs: a run that starts a few ms
 * earlier in its second than the one that notified is a period on, not a run short of it (which
 * made a 10 s period repeat after 10 s or 20 s by chance).
 */
export function repeatDue(alarm: AlarmRow, nowMs: number): boolean {
  if (alarm.repeat_actions !== 1) return false;
  return Math.round((nowMs - Date.parse(alarm.last_notified_at ?? alarm.state_updated_at)) / 1000) >= alarm.period_s;
}

/**
 * Evaluates every enabled alarm on a node-cron schedule, prunes samples and delivers actions.
 * Exactly one process does so even when several hearth-servers share a database: each run first
 * takes or renews the lease row with one conditional UPDATE (`holder = me OR expires_at < now`),
 * and the run's writes go in a transaction that renews it again with `holder = me AND expires_at >=
 * now` (a fence: a process that stalled past its lease writes nothing). On PostgreSQL the UPDATE
 * locks the row; a concurrent UPDATE waits for that transaction, then re-checks its WHERE against
 * the committed row (READ COMMITTED's re-evaluation) and matches nothing, so two processes can
 * never both see "taken" for the same term. SQLite has one writer at a time, which gives the same.
 */
export class AlarmEvaluator {
  private task: ScheduledTask | undefined;
  private running: Promise<EvaluationRun> | undefined;
  private readonly options: EvaluatorOptions;
  private readonly health: TaskHealth;
  /**
   * alarm id -> the last_notified_at this process wrote for it and performance.now() then: while the
   * row still holds it, the repeat period is measured on the monotonic clock (a wall-clock step back
   * held repeats off for the size of the step, one forward sent them early).
   */
  private readonly notified = new Map<string, { at: string; monotonicMs: number }>();

  constructor(
    private readonly store: Store,
    private readonly metrics: MetricService,
    private readonly deliverer: AlarmActionDeliverer,
    private readonly logError: (error: unknown) => void,
    options: Partial<EvaluatorOptions> = {},
  ) {
    this.health = new TaskHealth('alarm evaluator', logError);
    this.options = Object.freeze({ ...defaultEvaluatorOptions(), ...options });
    if (!cron.validate(this.options.schedule))
      throw new Error(`alarm evaluation schedule ${this.options.schedule} is not a cron expression`);
  }

  /** This process's lease holder id. */
  get holderId(): string {
    return this.options.holderId;
  }

  /** Starts the schedule. */
  start(): void {
    this.task ??= cron.schedule(
      this.options.schedule,
      () =>
        this.runOnce().then(
          () => this.health.succeeded(),
          (error: unknown) => this.health.failed(error),
        ),
      {
        name: `hearth-alarm-evaluator-${this.options.holderId}`,
        noOverlap: true,
        suppressMissedWarning: true,
      },
    );
  }

  /** Stops the schedule, waits for a run in progress and hands the lease back so another process takes over at once. */
  async stop(): Promise<void> {
    if (this.task) {
      await this.task.destroy();
      this.task = undefined;
    }
    await this.running?.catch(() => undefined);
    await this.store
      .write(async ({ trx }) => {
        // Expired long ago, not "now": a process taking over in the same millisecond compares
        // `expires_at < now` and would find the lease still held.
        await trx
          .updateTable('alarm_leases')
          .set({ expires_at: LEASE_RELEASED })
          .where('name', '=', ALARM_EVALUATOR_LEASE)
          .where('holder', '=', this.options.holderId)
          .execute();
      })
      .catch(this.logError);
  }

  /** One run (the schedule calls this; tests too). Concurrent calls share the run in progress. */
  runOnce(now?: Date): Promise<EvaluationRun> {
    this.running ??= this.run(now).finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Takes the lease if it is free or expired, or renews it if held; true when this process holds it. */
  async acquire(): Promise<boolean> {
    return this.store.write(async ({ trx, now }) => {
      const result = await trx
        .updateTable('alarm_leases')
        .set((eb) => ({
          holder: this.options.holderId,
          expires_at: this.leaseEnd(now),
          acquired_at: eb.case().when('holder', '=', this.options.holderId).then(eb.ref('acquired_at')).else(now).end(),
        }))
        .where('name', '=', ALARM_EVALUATOR_LEASE)
        .where((eb) => eb.or([eb('holder', '=', this.options.holderId), eb('expires_at', '<', now)]))
        .executeTakeFirst();
      return result.numUpdatedRows === 1n;
    });
  }

  /** Deletes an alarm's state changes older than the newest `historyKept`. */
  private async trimHistory(trx: Transaction<Database>, alarmId: string): Promise<void> {
    const oldestKept = await trx
      .selectFrom('alarm_history')
      .select('id')
      .where('alarm_id', '=', alarmId)
      .orderBy('id', 'desc')
      .limit(1)
      .offset(this.options.historyKept - 1)
      .executeTakeFirst();
    if (oldestKept) await trx.deleteFrom('alarm_history').where('alarm_id', '=', alarmId).where('id', '<', oldestKept.id).execute();
  }

  /**
   * repeatDue at `nowMs`, or, given `nowMonotonicMs` and while the row holds the last_notified_at this
   * process wrote, at that time plus the monotonic time since: a step of the wall clock moves neither.
   */
  private repeatDue(alarm: AlarmRow, nowMs: number, nowMonotonicMs: number | null): boolean {
    const mine = nowMonotonicMs === null ? undefined : this.notified.get(alarm.id);
    if (mine === undefined || mine.at !== alarm.last_notified_at) return repeatDue(alarm, nowMs);
    return repeatDue(alarm, Date.parse(mine.at) + (nowMonotonicMs! - mine.monotonicMs));
  }

  private leaseEnd(nowIso: string): string {
    return new Date(Date.parse(nowIso) + this.options.leaseSeconds * 1000).toISOString();
  }

  private async run(at?: Date): Promise<EvaluationRun> {
    const idle = { leader: false, evaluated: 0, changed: 0, repeated: 0, pruned: 0, delivered: 0 };
    if (!(await this.acquire())) return idle;
    // Monotonic, as deliverDue checks it: a wall-clock step back must not let deliveries run past the lease.
    const leaseHalfLife = performance.now() + (this.options.leaseSeconds * 1000) / 2;
    const nowMs = (at ?? new Date()).getTime();
    const nowMonotonicMs = performance.now();
    const alarms = await this.store.reader.selectFrom('alarms').selectAll().where('enabled', '=', 1).orderBy('id').execute();
    const enabled = new Set(alarms.map((alarm) => alarm.id));
    for (const id of this.notified.keys()) if (!enabled.has(id)) this.notified.delete(id);
    const decisions: Array<{ alarm: AlarmRow; decision: Decision }> = [];
    for (const alarm of alarms) {
      const rule = ruleOf(alarm);
      const since = new Date(windowStartMs(rule, nowMs)).toISOString();
      const values = await this.metrics.valuesFor(
        alarm.project_id,
        alarm.namespace,
        alarm.metric_name,
        JSON.parse(alarm.dimensions) as MetricDimensions,
        since,
      );
      decisions.push({ alarm, decision: decide(values, rule, nowMs) });
    }
    const written = await this.store.write(async ({ trx, now, event }) => {
      const fenced = await trx
        .updateTable('alarm_leases')
        .set({ expires_at: this.leaseEnd(now) })
        .where('name', '=', ALARM_EVALUATOR_LEASE)
        .where('holder', '=', this.options.holderId)
        .where('expires_at', '>=', now)
        .executeTakeFirst();
      if (fenced.numUpdatedRows !== 1n) return null;
      let changed = 0;
      let repeated = 0;
      const notifiedIds: string[] = [];
      // Repeats are timed on the evaluation clock (runOnce(at) in tests; the same as `now` otherwise).
      const evaluatedAt = new Date(nowMs).toISOString();
      for (const { alarm, decision } of decisions) {
        const next = decision.state;
        const data = {
          statistic: alarm.statistic,
          threshold: Number(alarm.threshold),
          comparison_operator: alarm.comparison_operator,
          datapoints: Object.fromEntries(decision.datapoints.map((d) => [new Date(d.startMs).toISOString(), d.value])),
        };
        if (next === null || next === alarm.state) {
          const repeat =
            next !== null && this.repeatDue(alarm, nowMs, at === undefined ? nowMonotonicMs : null) ? actionsFor(alarm, next) : [];
          const stayed = await trx
            .updateTable('alarms')
            .set({ last_evaluated_at: now, ...(repeat.length > 0 ? { last_notified_at: evaluatedAt } : {}) })
            .where('id', '=', alarm.id)
            .where('state', '=', alarm.state)
            .executeTakeFirst();
          if (next === null || repeat.length === 0 || stayed.numUpdatedRows !== 1n) continue;
          repeated++;
          notifiedIds.push(alarm.id);
          event(
            alarmEvent(
              alarm,
              'alarm.actions_repeated',
              `Alarm ${alarm.name} is still ${next}: its actions are sent again: ${decision.reason}`,
              data,
            ),
          );
          await enqueueDeliveries(trx, now, alarm.id, repeat, JSON.stringify(notificationOf(alarm, next, next, decision)));
          continue;
        }
        const moved = await trx
          .updateTable('alarms')
          .set({ state: next, state_reason: decision.reason, state_updated_at: now, last_evaluated_at: now, last_notified_at: evaluatedAt })
          .where('id', '=', alarm.id)
          .where('state', '=', alarm.state)
          .executeTakeFirst();
        if (moved.numUpdatedRows !== 1n) continue; // deleted or changed meanwhile
        changed++;
        notifiedIds.push(alarm.id);
        const previous = alarm.state as AlarmState;
        await trx
          .insertInto('alarm_history')
          .values({
            alarm_id: alarm.id,
            time: now,
            previous_state: previous,
            state: next,
            reason: decision.reason,
            data: JSON.stringify(data),
          })
          .execute();
        await this.trimHistory(trx, alarm.id);
        event(alarmEvent(alarm, 'alarm.state_changed', `Alarm ${alarm.name} ${previous} -> ${next}: ${decision.reason}`, data));
        const body = JSON.stringify(notificationOf(alarm, previous, next, decision));
        await enqueueDeliveries(trx, now, alarm.id, actionsFor(alarm, next), body);
      }
      const pruned = await this.metrics.prune(trx, now);
      await this.deliverer.prune(trx, now);
      return { changed, repeated, pruned, notifiedIds };
    });
    if (written === null) return idle;
    // Committed: from here on those rows hold evaluatedAt. (Runs on a given clock, runOnce(at), are timed on it alone.)
    if (at === undefined)
      for (const id of written.notifiedIds) this.notified.set(id, { at: new Date(nowMs).toISOString(), monotonicMs: nowMonotonicMs });
    // Deliveries stop at half the lease: a slow receiver cannot keep this run past it.
    const delivered = await this.deliverer.deliverDue(new Date(), leaseHalfLife);
    return {
      leader: true,
      evaluated: decisions.length,
      changed: written.changed,
      repeated: written.repeated,
      pruned: written.pruned,
      delivered,
    };
  }
}
