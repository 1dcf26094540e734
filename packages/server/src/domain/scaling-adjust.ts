import { randomUUID } from 'node:crypto';
import { heatTime, type ScalingOutcome } from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Database } from '../store/schema.ts';
import type { Store } from '../store/store.ts';
import type { ScalingGroupRow } from '../store/schema-scaling.ts';
import type { WriteContext } from '../store/write-queue.ts';
import type { ServerService } from './servers.ts';
import { HearthError } from './errors.ts';
import { bootstrapOf, groupEvent, scalingTopics, SCALING_LEASE_MS, type AdjustRequest, type AdjustResult } from './scaling-change.ts';
import { MEMBER_JOINING, MEMBER_MADE, MemberBootstrapper, reserveMembers, type NewMember } from './scaling-bootstrap.ts';
import { dropUndelivered, queueDelivery } from './scaling-outbox.ts';

// What the rest of hearth imports from here (they live in scaling-change.ts since the split).
export { bootstrapOf, groupEvent, scalingTopics, SCALING_LEASE_MS, type AdjustRequest, type AdjustResult };

type Plan =
  | { kind: 'done'; result: AdjustResult }
  | { kind: 'bootstrap'; group: ScalingGroupRow; target: number; leaseId: string; reserved: NewMember[] };

/**
 * Applies changes of desired capacity to a group (reference/server.md §6.4): cooldown and the
 * "in progress" flag are checked, the new capacity written, and the actuator delivery queued in
 * the same transaction. Unlike Heat, the flag is a lease that lapses after a crash, and a change
 * that does nothing is recorded as an event with its reason.
 */
export class ScalingAdjuster {
  private readonly bootstrapper: MemberBootstrapper;

  constructor(
    private readonly store: Store,
    /** The server records of members (a member removal deletes those hearth made). */
    readonly servers: ServerService,
    private readonly logError: (error: unknown) => void,
    /** How long the "scaling in progress" lease lasts (default SCALING_LEASE_MS; tests shorten it). */
    private readonly leaseMs = SCALING_LEASE_MS,
  ) {
    this.bootstrapper = new MemberBootstrapper(store, servers, logError, leaseMs);
  }

  /**
   * Deletes the member records that changes left unfinished (a crash between a bootstrap's writes),
   * of one group or all; returns how many. Every adjustment runs it for its group, before and after;
   * ScalingRecovery after a start. `cause` ends the event's message.
   */
  recoverLeftovers(groupId?: string, cause?: string): Promise<number> {
    return this.bootstrapper.recoverLeftovers(groupId, cause);
  }

  /** Runs one adjustment; with member_bootstrap, scale-ups create the new members' server records first. */
  async adjust(groupId: string, request: AdjustRequest): Promise<AdjustResult> {
    await this.recoverLeftovers(groupId);
    try {
      return await this.change(groupId, request);
    } finally {
      // A change this one superseded leaves its records joining once the lease is free: they go now
      // (or at the next change: a failure here does not undo this one's outcome).
      await this.recoverLeftovers(groupId).catch(this.logError);
    }
  }

  private async change(groupId: string, request: AdjustRequest): Promise<AdjustResult> {
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
          .set({ scaling_lease_id: leaseId, scaling_lease_until: new Date(Date.parse(ctx.now) + this.leaseMs).toISOString() })
          .where('id', '=', group.id)
          .execute();
        // Reserved with the lease: a crash from here on leaves rows recoverLeftovers finds.
        const reserved = await reserveMembers(ctx.trx, group, target - previous, ctx.now);
        return { kind: 'bootstrap', group, target, leaseId, reserved };
      }
      return { kind: 'done', result: await this.apply(ctx, group, target, [], request) };
    });
    if (plan.kind === 'done') return plan.result;
    return this.bootstrapper.run(plan.group, plan.target, plan.leaseId, plan.reserved, request, (ctx, group, target, members, req, note) =>
      this.apply(ctx, group, target, members, req, note),
    );
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

  /** How many members a group has (not counting joining rows). */
  private async memberCount(trx: Transaction<Database>, groupId: string): Promise<number> {
    const row = await trx
      .selectFrom('scaling_members')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('group_id', '=', groupId)
      .where('bootstrap', '!=', MEMBER_JOINING)
      .executeTakeFirstOrThrow();
    return Number(row.count);
  }

  /** Writes the new capacity, the new members, the cooldown and the outbox row, in the caller's transaction; `note` ends the reason. */
  private async apply(
    ctx: WriteContext,
    group: ScalingGroupRow,
    target: number,
    newMembers: NewMember[],
    request: AdjustRequest,
    note = '',
  ): Promise<AdjustResult> {
    const { trx, now } = ctx;
    // Reserved as joining when the lease was taken: members from now on, undelivered until a delivery carrying them gets a 2xx.
    if (newMembers.length > 0)
      await trx
        .updateTable('scaling_members')
        .set({ bootstrap: MEMBER_MADE, added_at: now, undelivered_sequence: group.next_sequence })
        .where('group_id', '=', group.id)
        .where(
          'server_id',
          'in',
          newMembers.map((m) => m.id),
        )
        .execute();
    const excess = target < group.desired_capacity ? (await this.memberCount(trx, group.id)) - target : 0;
    const dropped = await dropUndelivered(trx, group.id, excess);
    if (dropped.length > 0)
      ctx.event(
        groupEvent(
          group,
          'scaling_group.undelivered_removed',
          `${request.reason}: ${dropped.length} member(s) no delivery ever carried removed first (their records are deleted, their credentials revoked): ${dropped.join(', ')}`,
          { removed: dropped },
        ),
      );
    const payload = await queueDelivery(ctx, group, target, newMembers, request.reason);
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
    return { outcome: 'adjusted', reason, previous: group.desired_capacity, desired: target };
  }
}
