import { randomUUID } from 'node:crypto';
import {
  heatTime,
  type ScalingGroup,
  type ScalingGroupCreate,
  type ScalingGroupCreated,
  type ScalingGroupUpdate,
  type ScalingMember,
  type ScalingMembersChange,
} from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database, StackRow } from '../store/schema.ts';
import type { ScalingGroupRow } from '../store/schema-scaling.ts';
import { newRandomToken, type SecretDeriver } from '../auth/secrets.ts';
import { HearthError } from './errors.ts';
import type { StackService } from './stacks.ts';
import { boundsProblem } from './scaling-capacity.ts';
import { actuatorUrlProblem, sealSecret } from './scaling-webhook.ts';
import { bootstrapOf, groupEvent, scalingTopics, type AdjustResult, type ScalingAdjuster } from './scaling-adjust.ts';
import { MEMBER_JOINING, MEMBER_MADE } from './scaling-bootstrap.ts';
import { redeliverUndelivered, undeliveredMembers } from './scaling-outbox.ts';
import { shownUrl } from './link-local.ts';

/** Throws ERR_RESOURCE_EXISTS when a scaling group or policy already holds the name in the stack (the rest is StackService's). */
export async function assertScalingNameFree(
  trx: Transaction<Database>,
  stacks: StackService,
  stack: StackRow,
  name: string,
): Promise<void> {
  await stacks.assertNameFree(trx, stack, name);
  const taken =
    (await trx.selectFrom('scaling_groups').select('id').where('stack_id', '=', stack.id).where('name', '=', name).executeTakeFirst()) ??
    (await trx.selectFrom('scaling_policies').select('id').where('stack_id', '=', stack.id).where('name', '=', name).executeTakeFirst());
  if (taken) throw new HearthError('ERR_RESOURCE_EXISTS', { stack: stack.name, name });
}

/** Scaling groups: bounds, desired capacity, members and the actuator that learns of every change. */
export class ScalingGroupService {
  constructor(
    private readonly store: Store,
    private readonly stacks: StackService,
    private readonly secrets: SecretDeriver,
    private readonly adjuster: ScalingAdjuster,
  ) {}

  /** Creates a group; its initial capacity (desired, else min) goes to the actuator as the first change. */
  async create(projectId: string, stackRef: string, body: ScalingGroupCreate): Promise<ScalingGroupCreated> {
    const problem = boundsProblem(body.min_size, body.max_size, body.desired_capacity) ?? actuatorUrlProblem(body.actuator.url);
    if (problem) throw new HearthError('ERR_SCALING_GROUP_INVALID', { reason: problem });
    const generated = body.actuator.secret === undefined ? newRandomToken() : null;
    const row = await this.store.write(async ({ trx, now, event, publish }) => {
      // Read in the write transaction: a stack deleted meanwhile is a coded 404, not a group left in it.
      const stack = await this.stacks.resolve(projectId, stackRef, trx);
      await assertScalingNameFree(trx, this.stacks, stack, body.name);
      const values: ScalingGroupRow = {
        id: randomUUID(),
        project_id: projectId,
        stack_id: stack.id,
        name: body.name,
        min_size: body.min_size,
        max_size: body.max_size,
        desired_capacity: 0,
        cooldown_s: body.cooldown ?? 0,
        cooldown_end_at: null,
        cooldown_reason: null,
        scaling_lease_id: null,
        scaling_lease_until: null,
        last_activity_at: null,
        last_activity_reason: null,
        actuator_url: body.actuator.url,
        actuator_secret_sealed: sealSecret(this.secrets.tokenKey(), body.actuator.secret ?? generated!),
        member_bootstrap: body.member_bootstrap ? JSON.stringify(body.member_bootstrap) : null,
        next_sequence: 1,
        created_at: now,
        updated_at: null,
      };
      await trx.insertInto('scaling_groups').values(values).execute();
      event(groupEvent(values, 'scaling_group.created', `Scaling group ${values.name} created: [${values.min_size}, ${values.max_size}]`));
      publish(scalingTopics.group(values.id));
      return values;
    });
    const initial = body.desired_capacity ?? body.min_size;
    if (initial > 0) await this.operatorChange(row.id, () => initial, 'initial capacity');
    return { scaling_group: await this.show(projectId, stackRef, body.name), actuator_secret: generated };
  }

  /** A stack's groups by name. */
  async list(projectId: string, stackRef: string): Promise<ScalingGroup[]> {
    const stack = await this.stacks.resolve(projectId, stackRef);
    const rows = await this.store.reader
      .selectFrom('scaling_groups')
      .selectAll()
      .where('stack_id', '=', stack.id)
      .orderBy('name')
      .execute();
    return Promise.all(rows.map((row) => this.toApi(row, stack)));
  }

  /** One group with its members and outbox. */
  async show(projectId: string, stackRef: string, name: string): Promise<ScalingGroup> {
    const { row, stack } = await this.find(projectId, stackRef, name);
    return this.toApi(row, stack);
  }

  /** The group row and its stack by name, or ERR_SCALING_GROUP_NOT_FOUND. */
  async find(projectId: string, stackRef: string, name: string): Promise<{ row: ScalingGroupRow; stack: StackRow }> {
    const stack = await this.stacks.resolve(projectId, stackRef);
    const row = await this.store.reader
      .selectFrom('scaling_groups')
      .selectAll()
      .where('stack_id', '=', stack.id)
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) throw new HearthError('ERR_SCALING_GROUP_NOT_FOUND', { name, stack: stack.name });
    return { row, stack };
  }

  /**
   * New bounds or cooldown; the desired capacity becomes `desired_capacity` if given, else stays,
   * clamped to the new bounds (Heat's update rule, regardless of cooldown). A change is delivered.
   * A new actuator URL or secret is used from the next attempt on; members no delivery has carried
   * then get a delivery (redeliverUndelivered) if no change is pending to carry them.
   */
  async update(projectId: string, stackRef: string, name: string, body: ScalingGroupUpdate): Promise<ScalingGroup> {
    const { row, stack } = await this.find(projectId, stackRef, name);
    const urlProblem = body.actuator?.url === undefined ? null : actuatorUrlProblem(body.actuator.url);
    if (urlProblem) throw new HearthError('ERR_SCALING_GROUP_INVALID', { reason: urlProblem });
    // A new actuator alone changes no bounds: no bounds event, no capacity change to record.
    const actuatorOnly = body.actuator !== undefined && Object.keys(body).length === 1;
    await this.store.write(async (ctx) => {
      const { trx, now, event, publish } = ctx;
      // The fields not in the body come from the group as it is now: a concurrent update is kept, not undone.
      const current = await this.current(trx, row, stack);
      const minSize = body.min_size ?? current.min_size;
      const maxSize = body.max_size ?? current.max_size;
      const problem = boundsProblem(minSize, maxSize, body.desired_capacity);
      if (problem) throw new HearthError('ERR_SCALING_GROUP_INVALID', { reason: problem });
      const actuator = body.actuator ?? {};
      await trx
        .updateTable('scaling_groups')
        .set({
          min_size: minSize,
          max_size: maxSize,
          cooldown_s: body.cooldown ?? current.cooldown_s,
          actuator_url: actuator.url ?? current.actuator_url,
          actuator_secret_sealed:
            actuator.secret === undefined ? current.actuator_secret_sealed : sealSecret(this.secrets.tokenKey(), actuator.secret),
          updated_at: now,
        })
        .where('id', '=', row.id)
        .execute();
      if (!actuatorOnly) event(groupEvent(row, 'scaling_group.updated', `Scaling group ${row.name} bounds now [${minSize}, ${maxSize}]`));
      if (body.actuator !== undefined) {
        // The secret itself is never written to an event or a log.
        const changed = [
          actuator.url === undefined ? null : `URL ${shownUrl(actuator.url)}`,
          actuator.secret === undefined ? null : 'a new secret',
        ];
        event(groupEvent(row, 'scaling_group.actuator_changed', `Actuator of ${row.name} changed: ${changed.filter(Boolean).join(', ')}`));
        // With the new actuator, in its transaction: a 2xx for it means the undelivered members are on their way.
        if (actuatorOnly) await redeliverUndelivered(ctx, current);
      }
      publish(scalingTopics.group(row.id));
    });
    if (actuatorOnly) return this.show(projectId, stackRef, name);
    await this.operatorChange(row.id, (g) => clamp(body.desired_capacity ?? g.desired_capacity, g), 'group updated');
    // After the capacity change: one that scales down removes the undelivered members first, one that
    // scales up carries them; only what is left, with nothing pending, gets a delivery of its own.
    if (body.actuator !== undefined)
      await this.store.write(async (ctx) => {
        const group = await ctx.trx.selectFrom('scaling_groups').selectAll().where('id', '=', row.id).executeTakeFirst();
        if (group) await redeliverUndelivered(ctx, group);
      });
    return this.show(projectId, stackRef, name);
  }

  /** Deletes a group with its members list and pending deliveries; refuses while policies point at it. */
  async delete(projectId: string, stackRef: string, name: string): Promise<void> {
    const { row, stack } = await this.find(projectId, stackRef, name);
    await this.store.write(async ({ trx, event, publish }) => {
      // Checked again in the write transaction: a second delete at the same moment is a 404, not a second event.
      await this.current(trx, row, stack);
      const policies = await trx.selectFrom('scaling_policies').select('id').where('group_id', '=', row.id).execute();
      if (policies.length > 0) throw new HearthError('ERR_SCALING_GROUP_HAS_POLICIES', { name, count: policies.length });
      await trx.deleteFrom('actuator_deliveries').where('group_id', '=', row.id).execute();
      // Joining rows stay: their records are deleted by recoverLeftovers (a group gone holds no lease).
      await trx.deleteFrom('scaling_members').where('group_id', '=', row.id).where('bootstrap', '!=', MEMBER_JOINING).execute();
      await trx.deleteFrom('scaling_groups').where('id', '=', row.id).execute();
      event(groupEvent(row, 'scaling_group.deleted', `Scaling group ${row.name} deleted; undelivered changes dropped`));
      publish(scalingTopics.group(row.id));
    });
  }

  /**
   * Adds and removes members (server ids of this project), as the provisioner reports them. A removed
   * member whose record hearth made (member_bootstrap) is deleted with it, in the same transaction: its
   * VM is gone, so its credential is revoked and its deployments go as a server delete does them. A
   * member the provisioner added keeps its record.
   */
  async changeMembers(projectId: string, stackRef: string, name: string, body: ScalingMembersChange): Promise<ScalingGroup> {
    const { row, stack } = await this.find(projectId, stackRef, name);
    const add = [...new Set(body.add ?? [])];
    const remove = [...new Set(body.remove ?? [])];
    const servers = this.adjuster.servers;
    const deleted = await this.store.write(async (ctx) => {
      const { trx, now, event, publish } = ctx;
      await this.current(trx, row, stack);
      const known =
        add.length === 0
          ? []
          : await trx.selectFrom('servers').select('id').where('project_id', '=', projectId).where('id', 'in', add).execute();
      const missing = add.find((id) => !known.some((s) => s.id === id));
      if (missing !== undefined) throw new HearthError('ERR_SERVER_NOT_FOUND', { id: missing });
      for (const serverId of add)
        await trx
          .insertInto('scaling_members')
          .values({ group_id: row.id, server_id: serverId, bootstrap: 0, added_at: now })
          .onConflict((oc) => oc.columns(['group_id', 'server_id']).doNothing())
          .execute();
      const made =
        remove.length === 0
          ? []
          : await trx
              .selectFrom('scaling_members as m')
              .innerJoin('servers as s', 's.id', 'm.server_id')
              .selectAll('s')
              .where('m.group_id', '=', row.id)
              .where('m.server_id', 'in', remove)
              .where('m.bootstrap', '=', MEMBER_MADE)
              .where('s.project_id', '=', projectId)
              .orderBy('s.id')
              .execute();
      for (const server of made) await servers.deleteIn(ctx, server, ` (removed from scaling group ${row.name} by its provisioner)`);
      if (remove.length > 0)
        await trx
          .deleteFrom('scaling_members')
          .where('group_id', '=', row.id)
          .where('server_id', 'in', remove)
          .where('bootstrap', '!=', MEMBER_JOINING)
          .execute();
      const deletedIds = made.map((s) => s.id);
      const note = made.length === 0 ? '' : ` (${made.length} record(s) hearth made deleted, their credentials revoked)`;
      event(
        groupEvent(row, 'scaling_group.members_changed', `Members of ${row.name}: +${add.length} -${remove.length}${note}`, {
          add,
          remove,
          deleted_servers: deletedIds,
        }),
      );
      publish(scalingTopics.group(row.id));
      return made;
    });
    for (const server of deleted) servers.forgetDeleted(server);
    return this.show(projectId, stackRef, name);
  }

  /** The members of a group, oldest first. */
  async members(groupId: string): Promise<ScalingMember[]> {
    const rows = await this.store.reader
      .selectFrom('scaling_members')
      .selectAll()
      .where('group_id', '=', groupId)
      .where('bootstrap', '!=', MEMBER_JOINING)
      .orderBy('added_at')
      .orderBy('server_id')
      .execute();
    return rows.map((m) => ({
      server_id: m.server_id,
      bootstrap: m.bootstrap === MEMBER_MADE,
      added_time: heatTime(new Date(m.added_at)),
    }));
  }

  /** The group as it is in the write transaction, or ERR_SCALING_GROUP_NOT_FOUND when it was deleted since it was found. */
  private async current(trx: Transaction<Database>, found: ScalingGroupRow, stack: StackRow): Promise<ScalingGroupRow> {
    const row = await trx.selectFrom('scaling_groups').selectAll().where('id', '=', found.id).executeTakeFirst();
    if (!row) throw new HearthError('ERR_SCALING_GROUP_NOT_FOUND', { name: found.name, stack: stack.name });
    return row;
  }

  private operatorChange(groupId: string, target: (group: ScalingGroupRow) => number, reason: string): Promise<AdjustResult> {
    return this.adjuster.adjust(groupId, { target, cooldown: null, cooldownReason: reason, reason });
  }

  private async toApi(row: ScalingGroupRow, stack: StackRow): Promise<ScalingGroup> {
    const members = await this.members(row.id);
    const deliveries = await this.store.reader
      .selectFrom('actuator_deliveries')
      .select(['status', 'attempts', 'last_error', 'next_attempt_at'])
      .where('group_id', '=', row.id)
      .orderBy('sequence')
      .execute();
    const pending = deliveries.filter((d) => d.status === 'pending');
    // Failing: pending after a failed attempt, or failed for good (a redirect, a URL the outbound rule refuses).
    const failing = deliveries.filter((d) => (d.status === 'pending' && d.attempts > 0) || d.status === 'failed');
    const nowIso = new Date().toISOString();
    const time = (iso: string | null) => (iso === null ? null : heatTime(new Date(iso)));
    return {
      id: row.id,
      name: row.name,
      stack_id: stack.id,
      stack_name: stack.name,
      min_size: row.min_size,
      max_size: row.max_size,
      desired_capacity: row.desired_capacity,
      current_size: members.length,
      members,
      cooldown: row.cooldown_s,
      cooldown_end: row.cooldown_end_at !== null && row.cooldown_end_at > nowIso ? time(row.cooldown_end_at) : null,
      cooldown_reason: row.cooldown_end_at !== null && row.cooldown_end_at > nowIso ? row.cooldown_reason : null,
      scaling_in_progress: row.scaling_lease_until !== null && row.scaling_lease_until > nowIso,
      last_activity:
        row.last_activity_at === null ? null : { time: heatTime(new Date(row.last_activity_at)), reason: row.last_activity_reason ?? '' },
      actuator: { url: row.actuator_url },
      member_bootstrap: bootstrapOf(row),
      deliveries: {
        pending: pending.length,
        failed: failing.length,
        delivered: deliveries.filter((d) => d.status === 'delivered').length,
        undelivered_members: (await undeliveredMembers(this.store.reader, row.id)).length,
        last_error: failing.at(-1)?.last_error ?? null,
        next_attempt: time(pending[0]?.next_attempt_at ?? null),
      },
      creation_time: heatTime(new Date(row.created_at)),
      updated_time: time(row.updated_at),
    };
  }
}

function clamp(value: number, group: ScalingGroupRow): number {
  return Math.min(Math.max(value, group.min_size), group.max_size);
}
