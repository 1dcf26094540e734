// The writes every path that changes a wait condition shares: its events, its timeout, its ETag.
import type { WriteContext } from '../store/write-queue.ts';
import type { WaitConditionRow } from '../store/schema.ts';
import { resourceEvent } from './events.ts';
import { topics } from '../feed/feed.ts';
import { timeoutReason, type StoredSignal } from './wait-condition-rules.ts';
import type { WaitConditionGrace } from './wait-condition-grace.ts';

/** An event about a wait condition (its timeline is the events with its id). */
export function waitConditionEvent(row: WaitConditionRow, type: string, message: string, data: Record<string, unknown> = {}) {
  const resource = { project_id: row.project_id, resource_type: 'wait_condition', resource_id: row.id, server_id: null };
  return resourceEvent(resource, type, message, data);
}

/**
 * Fails an IN_PROGRESS condition whose deadline passed, with Heat's timeout reason (in the caller's
 * transaction); one the restart grace held says so after it.
 */
export async function timeOut(
  { trx, now, event, publish }: WriteContext,
  current: WaitConditionRow,
  signals: StoredSignal[],
  grace: WaitConditionGrace,
): Promise<WaitConditionRow> {
  const reason = `${timeoutReason(current, signals)}${grace.note(current)}`;
  const next = { ...current, status: 'FAILED', status_reason: reason, generation: current.generation + 1, updated_at: now };
  await trx
    .updateTable('wait_conditions')
    .set({ status: next.status, status_reason: reason, generation: next.generation, updated_at: now })
    .where('id', '=', current.id)
    .execute();
  event(waitConditionEvent(current, 'wait_condition.failed', reason));
  publish(topics.waitCondition(current.id));
  return next;
}

/** The strong ETag of a wait condition's state. */
export function etagOf(row: WaitConditionRow): string {
  return `"${row.id}-${row.generation}"`;
}
