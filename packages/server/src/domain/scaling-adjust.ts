import { randomUUID } from 'node:crypto';
import { heatTime, type ActuatorWebhook, type MemberBootstrap, type ScalingOutcome } from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database } from '../store/schema.ts';
import type { ScalingGroupRow } from '../store/schema-scaling.ts';
import type { WriteContext } from '../store/write-queue.ts';
import type { ServerService } from './servers.ts';
import { resourceEvent } from './events.ts';
import { HearthError } from './errors.ts';

/** Feed topics of scaling: one group changed; the actuator outbox has new work. */
export const scalingTopics = {
  group: (id: string) => `scaling-group:${id}`,
  outbox: 'actuator-outbox',
} as const;

/** How long the "scaling in progress" lease lasts: a crash mid-change blocks the group at most this long. */
export const SCALING_LEASE_MS = 60_000;

/** Most characters in a server's name and resource name (varchar(255) columns). */
const MAX_SERVER_NAME_LENGTH = 255;

/**
 * The name and resource name of a member that member_bootstrap creates: the group's name, `-` and
 * 8 random hex digits; a longer group name is cut so the whole fits in 255 characters (group names
 * are ASCII, so `slice` counts characters). A group's name may hold `.`, a server's resource name
 * may not (servers.ts), so each `.` becomes `-`: a group `web.tier` gets members `web-tier-1a2b3c4d`.
 */
function memberName(groupName: string): string {
  const suffix = `-${randomUUID().slice(0, 8)}`;
  return groupName.replace(/[^A-Za-z0-9_:-]/g, '-').slice(0, MAX_SERVER_NAME_LENGTH - suffix.length) + suffix;
}

/** One requested change of desired capacity. */
export interface AdjustRequest {
  /** The new desired capacity, computed from the group as it is inside the transaction (already clamped). */
  target: (group: ScalingGroupRow) => number;
  /** Cooldown to check and then stamp (seconds, from the group); null: an operator change, no cooldown either way. */
  cooldown: ((group: ScalingGroupRow) => number) | null;
  /** Reason stamped with the cooldown, Heat's `<adjustment_type> : <adjustment>`. */
  cooldownReason: string;
  /** Why: goes into the webhook, the event and the group's last activity. */
  reason: string;
  /** Records the outcome in the same transaction (a policy's last signal). */
  record?: (trx: Transaction<Database>, now: string, outcome: ScalingOutcome, reason: string) => Promise<void>;
  /**
   * Checked first in every transaction of the change: throws (a coded error) when it may no longer
   * be made, e.g. the alarm URL that asked for it was revoked after it was checked. None by default.
   */
  admit?: (trx: Transaction<Database>, now: string) => Promise<void>;
}

/** What an adjustment did. */
export interface AdjustResult {
  outcome: ScalingOutcome;
  reason: string;
  previous: number;
  desired: number;
}

type Plan = { kind: 'done'; result: AdjustResult } | { kind: 'bootstrap'; group: ScalingGroupRow; target: number; leaseId: string };

/**
 * What a bootstrap's capacity write did: written (with the records it did not make members), or
 * nothing because another change holds the group, or because min_size rose past what it created.
 */
type Written =
  { kind: 'written'; result: AdjustResult; dropped: Array<{ id: string }> } | { kind: 'superseded' } | { kind: 'short'; why: string };

/**
 * Applies changes of desired capacity to a group (reference/server.md §6.4): cooldown and the
 * "in progress" flag are checked, the new capacity written, and the actuator delivery queued in
 * the same transaction. Unlike Heat, the flag is a lease that lapses after a crash, and a change
 * that does nothing is recorded as an event with its reason.
 */
export class ScalingAdjuster {
  constructor(
    private readonly store: Store,
    private readonly servers: ServerService,
    private readonly logError: (error: unknown) => void,
  ) {}

  /** Runs one adjustment; with member_bootstrap, scale-ups create the new members' server records first. */
  async adjust(groupId: string, request: AdjustRequest): Promise<AdjustResult> {
    const plan = await this.store.write<Plan>(async (ctx) => {
      await request.admit?.(ctx.trx, ctx.now);
      const group = await ctx.trx.selectFrom('scaling_groups').selectAll().where('id', '=', groupId).executeTakeFirst();
      // Deleted after the caller found it (between an update's two writes): a coded 404, not a 500.
      if (!group) throw new HearthError('ERR_SCALING_GROUP_NOT_FOUND', { name: groupId, stack: '(deleted meanwhile)' });
      const blocked = this.blocker(group, request, ctx.now);
      const target = request.target(group);
      const previous = group.desired_capacity;
      const refuse = async (outcome: ScalingOutcome, why: string): Promise<Plan> => {
        const reason = `${request.reason}: ${why}`;
        ctx.event(groupEvent(group, `scaling_group.${outcome}`, reason, { outcome, desired_capacity: previous }));
        await request.record?.(ctx.trx, ctx.now, outcome, reason);
        return { kind: 'done', result: { outcome, reason, previous, desired: previous } };
      };
      if (blocked) return refuse(blocked.outcome, blocked.why);
      if (target === previous) return refuse('no_change', `desired capacity stays ${previous}`);
      const bootstrap = bootstrapOf(group);
      if (bootstrap && target > previous) {
        const leaseId = randomUUID();
        await ctx.trx
          .updateTable('scaling_groups')
          .set({ scaling_lease_id: leaseId, scaling_lease_until: new Date(Date.parse(ctx.now) + SCALING_LEASE_MS).toISOString() })
          .where('id', '=', group.id)
          .execute();
        return { kind: 'bootstrap', group, target, leaseId };
      }
      return { kind: 'done', result: await this.apply(ctx, group, target, [], request) };
    });
    if (plan.kind === 'done') return plan.result;
    return this.bootstrapAndApply(plan.group, plan.target, plan.leaseId, request);
  }

  /** Why a policy's change may not run now (lease held, cooldown running), or null. Operator changes are never blocked. */
  private blocker(group: ScalingGroupRow, request: AdjustRequest, now: string): { outcome: ScalingOutcome; why: string } | null {
    if (request.cooldown === null) return null;
    if (group.scaling_lease_until !== null && group.scaling_lease_until > now)
      return { outcome: 'in_progress', why: `scaling in progress until ${heatTime(new Date(group.scaling_lease_until))}` };
    if (group.cooldown_end_at !== null && group.cooldown_end_at > now)
      return {
        outcome: 'cooldown',
        why: `in cooldown until ${heatTime(new Date(group.cooldown_end_at))} (${group.cooldown_reason ?? 'last change'})`,
      };
    return null;
  }

  private async bootstrapAndApply(group: ScalingGroupRow, target: number, leaseId: string, request: AdjustRequest): Promise<AdjustResult> {
    const bootstrap = bootstrapOf(group)!;
    const created: Array<{ id: string; name: string }> = [];
    try {
      for (let i = 0; i < target - group.desired_capacity; i++) {
        const name = memberName(group.name);
        const server = await this.servers.create(group.project_id, {
          name,
          stack: group.stack_id,
          resource_name: name,
          software_config_transport: bootstrap.software_config_transport ?? 'HEARTH_LONG_POLL',
        });
        created.push({ id: server.server.id, name });
      }
    } catch (error) {
      await this.abandon(group, leaseId, created, `could not create member records: ${(error as Error).message}`);
      throw error;
    }
    let written: Written;
    try {
      written = await this.store.write<Written>(async (ctx) => {
        // Admitted again: the members took time to create, and the change may have been revoked meanwhile.
        await request.admit?.(ctx.trx, ctx.now);
        const current = await ctx.trx.selectFrom('scaling_groups').selectAll().where('id', '=', group.id).executeTakeFirst();
        if (!current || current.scaling_lease_id !== leaseId) return { kind: 'superseded' };
        // A group update does not wait for the lease: its bounds may have moved while the members were created.
        const clamped = Math.min(Math.max(target, current.min_size), current.max_size);
        const wanted = clamped - current.desired_capacity;
        if (wanted > created.length)
          return {
            kind: 'short',
            why: `min_size is ${current.min_size} now, above the ${target} this change was to reach; the group update that raised it sets the capacity`,
          };
        if (wanted <= 0) {
          const reason = `${request.reason}: desired capacity stays ${current.desired_capacity} (max_size is ${current.max_size} now)`;
          await ctx.trx
            .updateTable('scaling_groups')
            .set({ scaling_lease_id: null, scaling_lease_until: null })
            .where('id', '=', group.id)
            .execute();
          ctx.event(
            groupEvent(current, 'scaling_group.no_change', reason, { outcome: 'no_change', desired_capacity: current.desired_capacity }),
          );
          await request.record?.(ctx.trx, ctx.now, 'no_change', reason);
          const result: AdjustResult = {
            outcome: 'no_change',
            reason,
            previous: current.desired_capacity,
            desired: current.desired_capacity,
          };
          return { kind: 'written', result, dropped: created };
        }
        const dropped = created.slice(wanted);
        const note =
          dropped.length === 0
            ? ''
            : ` (max_size is ${current.max_size} now: ${dropped.length} of the ${created.length} new members' records deleted)`;
        const result = await this.apply(ctx, current, clamped, created.slice(0, wanted), request, note);
        return { kind: 'written', result, dropped };
      });
    } catch (error) {
      await this.abandon(group, leaseId, created, `the change was refused: ${(error as Error).message}`);
      throw error;
    }
    if (written.kind === 'written') {
      await this.discard(group, written.dropped);
      return written.result;
    }
    const why = written.kind === 'short' ? written.why : 'another change of capacity was written meanwhile, or the scaling lease lapsed';
    await this.abandon(group, leaseId, created, why);
    return {
      outcome: 'in_progress',
      reason: `${request.reason}: ${why}`,
      previous: group.desired_capacity,
      desired: group.desired_capacity,
    };
  }

  /** Gives up a bootstrap: deletes the server records made for it and releases the lease if still ours. */
  private async abandon(group: ScalingGroupRow, leaseId: string, created: Array<{ id: string }>, why: string): Promise<void> {
    await this.discard(group, created);
    await this.store.write(async ({ trx, event }) => {
      await trx
        .updateTable('scaling_groups')
        .set({ scaling_lease_id: null, scaling_lease_until: null })
        .where('id', '=', group.id)
        .where('scaling_lease_id', '=', leaseId)
        .execute();
      event(groupEvent(group, 'scaling_group.error', `Scaling ${group.name} failed: ${why}`));
    });
  }

  /** Deletes the server records a bootstrap made and did not make members (each delete writes its own event). */
  private async discard(group: ScalingGroupRow, servers: Array<{ id: string }>): Promise<void> {
    for (const server of servers) await this.servers.delete(group.project_id, server.id).catch(this.logError);
  }

  /** Writes the new capacity, the new members, the cooldown and the outbox row, in the caller's transaction; `note` ends the reason. */
  private async apply(
    ctx: WriteContext,
    group: ScalingGroupRow,
    target: number,
    newMembers: Array<{ id: string; name: string }>,
    request: AdjustRequest,
    note = '',
  ): Promise<AdjustResult> {
    const { trx, now } = ctx;
    const members = await trx
      .selectFrom('scaling_members')
      .select('server_id')
      .where('group_id', '=', group.id)
      .orderBy('added_at')
      .orderBy('server_id')
      .execute();
    for (const member of newMembers)
      await trx.insertInto('scaling_members').values({ group_id: group.id, server_id: member.id, bootstrap: 1, added_at: now }).execute();
    // Oldest first, ties by server id: the order `members` lists them in.
    const memberIds = [...members.map((m) => m.server_id), ...newMembers.map((m) => m.id).sort()];
    const payload: ActuatorWebhook = {
      delivery_id: randomUUID(),
      sequence: group.next_sequence,
      time: heatTime(new Date(now)),
      group: { id: group.id, name: group.name, project_id: group.project_id, stack_id: group.stack_id, stack_name: '' },
      previous_capacity: group.desired_capacity,
      desired_capacity: target,
      min_size: group.min_size,
      max_size: group.max_size,
      reason: request.reason,
      members: memberIds,
      remove_candidates: memberIds.slice(0, Math.max(0, memberIds.length - target)),
      // Stored without credentials: the deliverer derives them when it sends.
      new_members: newMembers.map((m) => ({
        server_id: m.id,
        name: m.name,
        credential: null,
        os_collect_config: null,
        os_collect_config_conf: null,
      })),
    };
    const stack = await trx.selectFrom('stacks').select('name').where('id', '=', group.stack_id).executeTakeFirst();
    payload.group.stack_name = stack?.name ?? '';
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
    let cooldownEnd = group.cooldown_end_at;
    let cooldownReason = group.cooldown_reason;
    if (request.cooldown !== null) {
      const end = new Date(Date.parse(now) + request.cooldown(group) * 1000).toISOString();
      if (cooldownEnd === null || end > cooldownEnd) cooldownEnd = end;
      cooldownReason = request.cooldownReason;
    }
    await trx
      .updateTable('scaling_groups')
      .set({
        desired_capacity: target,
        next_sequence: group.next_sequence + 1,
        cooldown_end_at: cooldownEnd,
        cooldown_reason: cooldownReason,
        scaling_lease_id: null,
        scaling_lease_until: null,
        last_activity_at: now,
        last_activity_reason: request.reason,
        updated_at: now,
      })
      .where('id', '=', group.id)
      .execute();
    const reason = `${request.reason}: desired capacity ${group.desired_capacity} -> ${target}${note}`;
    ctx.event(
      groupEvent(group, 'scaling_group.adjusted', reason, {
        previous_capacity: group.desired_capacity,
        desired_capacity: target,
        sequence: payload.sequence,
        new_members: newMembers.map((m) => m.id),
      }),
    );
    await request.record?.(trx, now, 'adjusted', reason);
    ctx.publish(scalingTopics.group(group.id));
    ctx.publish(scalingTopics.outbox);
    return { outcome: 'adjusted', reason, previous: group.desired_capacity, desired: target };
  }
}

/** The member_bootstrap settings of a group, or null. */
export function bootstrapOf(group: ScalingGroupRow): MemberBootstrap | null {
  return group.member_bootstrap === null ? null : (JSON.parse(group.member_bootstrap) as MemberBootstrap);
}

/** An event row about a scaling group. */
export function groupEvent(group: ScalingGroupRow, type: string, message: string, data: Record<string, unknown> = {}) {
  const resource = { project_id: group.project_id, resource_type: 'scaling_group', resource_id: group.id, server_id: null };
  return resourceEvent(resource, type, message, { group: group.name, ...data });
}
