import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { heatTime, type WaitCondition, type WaitConditionCreate, type WaitConditionHeartbeat } from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { StackRow, WaitConditionRow, WaitConditionSignalRow } from '../store/schema.ts';
import { topics, waitForChange, type Feed } from '../feed/feed.ts';
import { newAccessKeyId } from '../auth/secrets.ts';
import { HearthError } from './errors.ts';
import type { StackService } from './stacks.ts';
import type { TransportContext } from './transports.ts';
import { waitConditionView } from './wait-condition-view.ts';
import type { WaitSignal } from './wait-condition-signals.ts';
import { decide } from './wait-condition-rules.ts';
import { etagOf, timeOut, waitConditionEvent } from './wait-condition-writes.ts';
import { WaitConditionGrace } from './wait-condition-grace.ts';

/** Wait conditions: count, timeout, failure policy, signals from CFN and Heat handles, long-poll. */
export class WaitConditionService {
  constructor(
    private readonly store: Store,
    private readonly feed: Feed,
    private readonly stacks: StackService,
    private readonly transport: TransportContext,
    /** Holds, after a restart, the deadlines of conditions created before it (default: a grace from now). */
    private readonly grace = new WaitConditionGrace(),
  ) {}

  /** Creates a wait condition in a stack; its timer starts now. */
  async create(projectId: string, stackRef: string, body: WaitConditionCreate): Promise<WaitCondition> {
    const { row, stack } = await this.store.write(async ({ trx, now, event, publish }) => {
      // In the transaction: a stack deleted meanwhile is a coded 404, not a foreign-key failure.
      const stack = await this.stacks.resolve(projectId, stackRef, trx);
      await this.stacks.assertNameFree(trx, stack, body.name);
      const values: WaitConditionRow = {
        id: randomUUID(),
        project_id: projectId,
        stack_id: stack.id,
        name: body.name,
        count: body.count ?? 1,
        timeout_s: body.timeout,
        max_failures: body.max_failures ?? null,
        min_success_percent: body.min_success_percent ?? null,
        status: 'IN_PROGRESS',
        status_reason: null,
        deadline_at: new Date(Date.parse(now) + body.timeout * 1000).toISOString(),
        access_key_id: newAccessKeyId(this.transport.secrets),
        urls_expire_at: body.url_expires_in === undefined ? null : new Date(Date.parse(now) + body.url_expires_in * 1000).toISOString(),
        generation: 1,
        created_at: now,
        updated_at: null,
      };
      await trx.insertInto('wait_conditions').values(values).execute();
      await trx
        .insertInto('resource_credentials')
        .values({
          access_key_id: values.access_key_id,
          project_id: projectId,
          kind: 'wait_condition',
          target_id: values.id,
          created_at: now,
        })
        .execute();
      event(
        waitConditionEvent(
          values,
          'wait_condition.created',
          `Wait condition ${values.name} created: ${values.count} signal(s) within ${values.timeout_s} s`,
        ),
      );
      publish(topics.waitCondition(values.id));
      return { row: values, stack };
    });
    return waitConditionView(this.transport, row, stack, []);
  }

  /** A stack's wait conditions by name. */
  async list(projectId: string, stackRef: string): Promise<WaitCondition[]> {
    const stack = await this.stacks.resolve(projectId, stackRef);
    const rows = await this.store.reader
      .selectFrom('wait_conditions')
      .selectAll()
      .where('stack_id', '=', stack.id)
      .orderBy('name')
      .execute();
    return Promise.all(rows.map(async (row) => waitConditionView(this.transport, row, stack, await this.signalsOf(row.id))));
  }

  /** One wait condition with its ETag; with `waitMs`, holds while `unchanged(etag)` says the client has it. */
  async get(
    projectId: string,
    stackRef: string,
    name: string,
    wait?: { unchanged: (etag: string) => boolean; waitMs: number; abort?: AbortSignal },
  ): Promise<{ condition: WaitCondition; etag: string }> {
    const stack = await this.stacks.resolve(projectId, stackRef);
    let row = await this.rowByName(stack, name);
    if (wait) {
      // On the monotonic clock: with the wall clock, a step back (NTP) held the wait open for as long as the step.
      const until = performance.now() + wait.waitMs;
      while (wait.unchanged(etagOf(row)) && performance.now() < until && !wait.abort?.aborted) {
        await waitForChange(this.feed, [topics.waitCondition(row.id)], until - performance.now(), wait.abort);
        row = await this.rowByName(stack, name);
      }
    }
    return { condition: waitConditionView(this.transport, row, stack, await this.signalsOf(row.id)), etag: etagOf(row) };
  }

  /** Deletes a wait condition; its URLs and token stop working at once. */
  async delete(projectId: string, stackRef: string, name: string): Promise<void> {
    await this.store.write(async ({ trx, event, publish }) => {
      const stack = await this.stacks.resolve(projectId, stackRef, trx);
      const row = await this.rowByName(stack, name, trx);
      await trx.deleteFrom('wait_condition_signals').where('wait_condition_id', '=', row.id).execute();
      await trx.deleteFrom('resource_credentials').where('access_key_id', '=', row.access_key_id).execute();
      await trx.deleteFrom('wait_conditions').where('id', '=', row.id).execute();
      event(waitConditionEvent(row, 'wait_condition.deleted', `Wait condition ${row.name} deleted; its handle URLs are revoked`));
      publish(topics.waitCondition(row.id));
    });
  }

  /** Extends the deadline (beyond Heat): by `extend` seconds from now, default the condition's timeout. */
  async heartbeat(projectId: string, stackRef: string, name: string, body: WaitConditionHeartbeat): Promise<WaitCondition> {
    const { row, stack } = await this.store.write(async ({ trx, now, event, publish }) => {
      // In the transaction: a condition (or stack) deleted meanwhile is a coded 404.
      const stack = await this.stacks.resolve(projectId, stackRef, trx);
      const current = await this.rowByName(stack, name, trx);
      if (current.status !== 'IN_PROGRESS') throw new HearthError('ERR_WAIT_CONDITION_DONE', { name, status: current.status });
      // A heartbeat past the deadline does not revive a condition the sweeper has not reached yet
      // (one the restart grace holds has not timed out: it is extended from now).
      if (this.grace.timedOut(current, now)) {
        const signals = await trx.selectFrom('wait_condition_signals').selectAll().where('wait_condition_id', '=', current.id).execute();
        return { row: await timeOut({ trx, now, event, publish }, current, signals, this.grace), stack: null };
      }
      const extended = new Date(Date.parse(now) + (body.extend ?? current.timeout_s) * 1000).toISOString();
      const next = {
        ...current,
        deadline_at: extended > current.deadline_at ? extended : current.deadline_at,
        generation: current.generation + 1,
        updated_at: now,
      };
      await trx
        .updateTable('wait_conditions')
        .set({ deadline_at: next.deadline_at, generation: next.generation, updated_at: now })
        .where('id', '=', current.id)
        .execute();
      event(
        waitConditionEvent(
          next,
          'wait_condition.heartbeat',
          `Heartbeat${body.message ? `: ${body.message}` : ''}; deadline ${heatTime(new Date(next.deadline_at))}`,
        ),
      );
      publish(topics.waitCondition(current.id));
      return { row: next, stack };
    });
    if (stack === null) throw new HearthError('ERR_WAIT_CONDITION_DONE', { name, status: row.status });
    return waitConditionView(this.transport, row, stack, await this.signalsOf(row.id));
  }

  /**
   * Applies a signal to a wait condition (by id: the caller already proved its right to it).
   * The same signal again (same id, status, reason and data: a retry whose answer was lost) is
   * acknowledged and changes nothing, even once the condition is done. Otherwise a repeated id
   * replaces the earlier signal, and a condition that is done answers 409 and keeps its state. A
   * signal without an id gets the next number not taken (Heat's count of signals + 1, which an
   * explicit id of that number would otherwise swallow, again and again).
   */
  async signal(id: string, signal: WaitSignal): Promise<WaitCondition> {
    const { row, stack } = await this.store.write(async ({ trx, now, event, publish }) => {
      const current = await trx.selectFrom('wait_conditions').selectAll().where('id', '=', id).executeTakeFirst();
      if (!current) throw new HearthError('ERR_WAIT_CONDITION_NOT_FOUND', { name: id, stack: '?' });
      const stored = await trx.selectFrom('wait_condition_signals').selectAll().where('wait_condition_id', '=', id).execute();
      const data = JSON.stringify(signal.data ?? null);
      const earlier = signal.id === undefined ? undefined : stored.find((s) => s.signal_id === signal.id);
      if (earlier && earlier.status === signal.status && (earlier.reason ?? null) === (signal.reason ?? null) && earlier.data === data) {
        const stackRow = await trx.selectFrom('stacks').selectAll().where('id', '=', current.stack_id).executeTakeFirstOrThrow();
        return { row: current, stack: stackRow };
      }
      if (current.status !== 'IN_PROGRESS')
        throw new HearthError('ERR_WAIT_CONDITION_DONE', { name: current.name, status: current.status });
      // Past the deadline the condition has timed out, swept or not (Heat checks the timeout first),
      // unless the restart grace holds it: then the signal may be one queued during the outage.
      if (this.grace.timedOut(current, now))
        return { row: await timeOut({ trx, now, event, publish }, current, stored, this.grace), stack: null };
      const signalId = signal.id ?? nextFreeNumber(stored.map((s) => s.signal_id));
      const record: WaitConditionSignalRow = {
        wait_condition_id: id,
        signal_id: signalId,
        status: signal.status,
        reason: signal.reason,
        data,
        received_at: now,
      };
      const replaced = stored.some((s) => s.signal_id === signalId);
      await trx
        .insertInto('wait_condition_signals')
        .values(record)
        .onConflict((oc) =>
          oc
            .columns(['wait_condition_id', 'signal_id'])
            .doUpdateSet({ status: record.status, reason: record.reason, data: record.data, received_at: now }),
        )
        .execute();
      const all = [...stored.filter((s) => s.signal_id !== signalId), record];
      const verdict = decide(current, all);
      const next: WaitConditionRow = {
        ...current,
        status: verdict?.status ?? 'IN_PROGRESS',
        status_reason: verdict?.reason ?? null,
        generation: current.generation + 1,
        updated_at: now,
      };
      await trx
        .updateTable('wait_conditions')
        .set({ status: next.status, status_reason: next.status_reason, generation: next.generation, updated_at: now })
        .where('id', '=', id)
        .execute();
      event(
        waitConditionEvent(
          next,
          'wait_condition.signal',
          `Signal: status:${signal.status} reason:${signal.reason ?? ''}${replaced ? ` (replaces signal ${signalId})` : ''}`,
          {
            id: signalId,
            status: signal.status,
          },
        ),
      );
      if (verdict) event(waitConditionEvent(next, `wait_condition.${verdict.status.toLowerCase()}`, verdict.reason));
      publish(topics.waitCondition(id));
      const stackRow = await trx.selectFrom('stacks').selectAll().where('id', '=', current.stack_id).executeTakeFirstOrThrow();
      return { row: next, stack: stackRow };
    });
    // The timeout is committed; the signal is refused as one to a condition that is done.
    if (stack === null) throw new HearthError('ERR_WAIT_CONDITION_DONE', { name: row.name, status: row.status });
    return waitConditionView(this.transport, row, stack, await this.signalsOf(id));
  }

  /** Heat's handle metadata: signal id → {status, reason, data}. */
  async handleMetadata(id: string): Promise<Record<string, unknown>> {
    const signals = await this.signalsOf(id);
    return Object.fromEntries(
      signals.map((s) => [s.signal_id, { status: s.status, reason: s.reason, data: JSON.parse(s.data) as unknown }]),
    );
  }

  /** The stack's condition of that name, read through `db` (default the reader), or ERR_WAIT_CONDITION_NOT_FOUND. */
  private async rowByName(
    stack: StackRow,
    name: string,
    db: Pick<Store['reader'], 'selectFrom'> = this.store.reader,
  ): Promise<WaitConditionRow> {
    const row = await db
      .selectFrom('wait_conditions')
      .selectAll()
      .where('stack_id', '=', stack.id)
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) throw new HearthError('ERR_WAIT_CONDITION_NOT_FOUND', { name, stack: stack.name });
    return row;
  }

  private signalsOf(id: string): Promise<WaitConditionSignalRow[]> {
    return this.store.reader
      .selectFrom('wait_condition_signals')
      .selectAll()
      .where('wait_condition_id', '=', id)
      .orderBy('received_at')
      .execute();
  }
}

/** The first number from (count + 1) up that no signal has as its id. */
function nextFreeNumber(taken: string[]): string {
  const used = new Set(taken);
  let n = taken.length + 1;
  while (used.has(String(n))) n++;
  return String(n);
}
