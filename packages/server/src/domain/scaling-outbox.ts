// The actuator outbox as the writers of changes see it: the row one change queues, and what hearth
// does about the members hearth made (member_bootstrap) whose credential no delivery has carried with a
// 2xx yet (scaling_members.undelivered_sequence). Every delivery carries such members of earlier
// changes in its `new_members` (scaling-deliverer.ts); a scale-down with no delivery pending removes
// them first; a change of the actuator queues a delivery for them when none is pending.
import { randomUUID } from 'node:crypto';
import { heatTime, type ActuatorWebhook } from '@hearth/protocol';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../store/schema.ts';
import type { ScalingGroupRow } from '../store/schema-scaling.ts';
import type { WriteContext } from '../store/write-queue.ts';
import { MEMBER_JOINING, type NewMember } from './scaling-bootstrap.ts';
import { groupEvent, scalingTopics } from './scaling-change.ts';

/**
 * Queues the delivery of one change (the group's next sequence, which it takes) in the caller's
 * transaction: the members as they are (oldest first), the remove candidates and the new members,
 * stored without credentials (the deliverer derives them when it sends). Returns the payload.
 */
export async function queueDelivery(
  ctx: WriteContext,
  group: ScalingGroupRow,
  target: number,
  newMembers: NewMember[],
  reason: string,
): Promise<ActuatorWebhook> {
  const { trx, now } = ctx;
  const members = await trx
    .selectFrom('scaling_members')
    .select('server_id')
    .where('group_id', '=', group.id)
    .where('bootstrap', '!=', MEMBER_JOINING)
    .where('server_id', 'not in', newMembers.map((m) => m.id).concat(''))
    .orderBy('added_at')
    .orderBy('server_id')
    .execute();
  // Oldest first, ties by server id: the order `members` lists them in.
  const memberIds = [...members.map((m) => m.server_id), ...newMembers.map((m) => m.id).sort()];
  const stack = await trx.selectFrom('stacks').select('name').where('id', '=', group.stack_id).executeTakeFirst();
  const payload: ActuatorWebhook = {
    delivery_id: randomUUID(),
    sequence: group.next_sequence,
    time: heatTime(new Date(now)),
    group: { id: group.id, name: group.name, project_id: group.project_id, stack_id: group.stack_id, stack_name: stack?.name ?? '' },
    previous_capacity: group.desired_capacity,
    desired_capacity: target,
    min_size: group.min_size,
    max_size: group.max_size,
    reason,
    members: memberIds,
    remove_candidates: memberIds.slice(0, Math.max(0, memberIds.length - target)),
    new_members: newMembers.map((m) => ({
      server_id: m.id,
      name: m.name,
      credential: null,
      os_collect_config: null,
      os_collect_config_conf: null,
    })),
  };
  await trx
    .insertInto('actuator_deliveries')
    .values({
      delivery_id: payload.delivery_id,
      group_id: group.id,
      sequence: payload.sequence,
      payload: JSON.stringify(payload),
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      last_error: null,
      claimed_until: null,
      created_at: now,
      delivered_at: null,
    })
    .execute();
  await trx
    .updateTable('scaling_groups')
    .set({ next_sequence: group.next_sequence + 1 })
    .where('id', '=', group.id)
    .execute();
  ctx.publish(scalingTopics.outbox);
  return payload;
}

/** True when a delivery of the group waits for a 2xx: it (and each after it) carries every undelivered member. */
async function hasPending(trx: Transaction<Database>, groupId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('actuator_deliveries')
    .select('id')
    .where('group_id', '=', groupId)
    .where('status', '=', 'pending')
    .executeTakeFirst();
  return row !== undefined;
}

/** The members of a group no delivery has carried with a 2xx, oldest change first. */
export function undeliveredMembers(db: Kysely<Database>, groupId: string) {
  return db
    .selectFrom('scaling_members')
    .select(['server_id', 'undelivered_sequence'])
    .where('group_id', '=', groupId)
    .where('undelivered_sequence', 'is not', null)
    .where('bootstrap', '!=', MEMBER_JOINING)
    .orderBy('undelivered_sequence')
    .orderBy('server_id')
    .execute();
}

/**
 * On a scale-down by `excess` members, when no delivery is pending (so none can carry them any more):
 * the members no delivery carried, newest first, stop being members before any member the actuator
 * knows is asked to go. They become joining rows, whose records recoverLeftovers deletes once no
 * change holds the lease (this one's end, or after a crash, the recovery): that revokes their
 * credentials, which nobody was ever handed. Returns their ids.
 */
export async function dropUndelivered(trx: Transaction<Database>, groupId: string, excess: number): Promise<string[]> {
  if (excess <= 0 || (await hasPending(trx, groupId))) return [];
  const undelivered = await undeliveredMembers(trx, groupId);
  const dropped = undelivered
    .reverse()
    .slice(0, excess)
    .map((m) => m.server_id);
  if (dropped.length > 0)
    await trx
      .updateTable('scaling_members')
      .set({ bootstrap: MEMBER_JOINING })
      .where('group_id', '=', groupId)
      .where('server_id', 'in', dropped)
      .execute();
  return dropped;
}

/**
 * After the operator changed a group's actuator: a pending delivery is tried at once (it waited for
 * its backoff), and with none pending while members are undelivered, a delivery at the same capacity
 * is queued to carry them. Returns its sequence, or null when none was needed.
 */
export async function redeliverUndelivered(ctx: WriteContext, group: ScalingGroupRow): Promise<number | null> {
  const { trx, now } = ctx;
  await trx
    .updateTable('actuator_deliveries')
    .set({ next_attempt_at: now })
    .where('group_id', '=', group.id)
    .where('status', '=', 'pending')
    .execute();
  ctx.publish(scalingTopics.outbox);
  if (await hasPending(trx, group.id)) return null;
  const undelivered = await undeliveredMembers(trx, group.id);
  if (undelivered.length === 0) return null;
  const reason = `actuator changed: ${undelivered.length} member(s) no delivery has carried`;
  const payload = await queueDelivery(ctx, group, group.desired_capacity, [], reason);
  ctx.event(
    groupEvent(group, 'scaling_group.redelivery_queued', `${reason} go out in change ${payload.sequence}`, {
      sequence: payload.sequence,
      undelivered_members: undelivered.map((m) => m.server_id),
    }),
  );
  ctx.publish(scalingTopics.group(group.id));
  return payload.sequence;
}
