import { randomUUID } from 'node:crypto';
import {
  heatTime,
  type AdjustmentType,
  type ScalingPolicy,
  type ScalingPolicyCreate,
  type ScalingPolicyRotate,
  type ScalingSignalResult,
} from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database, StackRow } from '../store/schema.ts';
import type { ResourceCredentialsTable } from '../store/schema.ts';
import type { ScalingPolicyRow } from '../store/schema-scaling.ts';
import { newAccessKeyId } from '../auth/secrets.ts';
import { HearthError } from './errors.ts';
import type { StackService } from './stacks.ts';
import type { TransportContext } from './transports.ts';
import { policyView } from './scaling-policy-view.ts';
import { effectiveCooldown, newCapacity } from './scaling-capacity.ts';
import { parseAlarmPayload, shouldAct } from './scaling-alarm-payload.ts';
import { assertScalingNameFree, type ScalingGroupService } from './scaling-groups.ts';
import type { ScalingAdjuster } from './scaling-adjust.ts';
import { resourceEvent } from './events.ts';

/** The credential kind of a policy's access key in `resource_credentials`. */
const POLICY_CREDENTIAL_KIND: ResourceCredentialsTable['kind'] = 'scaling_policy';

/** The credential a signal came with: the alarm URL's or token's access key, and when it expires (null: never). */
export interface PolicyCredential {
  accessKeyId: string;
  expiresAt: string | null;
}

/** Scaling policies: Heat's adjustments, signalled by alarm webhooks on rotatable, revocable URLs. */
export class ScalingPolicyService {
  constructor(
    private readonly store: Store,
    private readonly stacks: StackService,
    private readonly groups: ScalingGroupService,
    private readonly adjuster: ScalingAdjuster,
    private readonly transport: TransportContext,
  ) {}

  /** Creates a policy on a group of the same stack, with its own access key. */
  async create(projectId: string, stackRef: string, body: ScalingPolicyCreate): Promise<ScalingPolicy> {
    const { row: group, stack } = await this.groups.find(projectId, stackRef, body.group);
    if (body.min_adjustment_step !== undefined && body.adjustment_type !== 'percent_change_in_capacity')
      throw new HearthError('ERR_SCALING_POLICY_INVALID', {
        reason: `min_adjustment_step is allowed only with adjustment_type percent_change_in_capacity, not ${body.adjustment_type}`,
      });
    if (body.adjustment_type === 'exact_capacity' && body.scaling_adjustment < 0)
      throw new HearthError('ERR_SCALING_POLICY_INVALID', { reason: `an exact_capacity of ${body.scaling_adjustment} is negative` });
    const row = await this.store.write(async ({ trx, now, event }) => {
      // Checked again in the write transaction: a group deleted meanwhile must not get an orphan policy.
      const current = await trx.selectFrom('scaling_groups').select('id').where('id', '=', group.id).executeTakeFirst();
      if (!current) throw new HearthError('ERR_SCALING_GROUP_NOT_FOUND', { name: body.group, stack: stack.name });
      await assertScalingNameFree(trx, this.stacks, stack, body.name);
      const values: ScalingPolicyRow = {
        id: randomUUID(),
        project_id: projectId,
        stack_id: stack.id,
        group_id: group.id,
        name: body.name,
        adjustment_type: body.adjustment_type,
        scaling_adjustment: body.scaling_adjustment,
        min_adjustment_step: body.min_adjustment_step ?? null,
        cooldown_s: body.cooldown ?? null,
        act_only_on_alarm: body.act_only_on_alarm ? 1 : 0,
        access_key_id: newAccessKeyId(this.transport.secrets),
        key_issued_at: now,
        urls_expire_at: expiry(now, body.url_expires_in),
        last_signal_at: null,
        last_signal_outcome: null,
        last_signal_reason: null,
        created_at: now,
      };
      await trx.insertInto('scaling_policies').values(values).execute();
      await this.grant(trx, values, now);
      event(policyEvent(values, 'scaling_policy.created', `Scaling policy ${values.name} on ${group.name}: ${describe(values)}`));
      return values;
    });
    return policyView(this.transport, row, stack, group.name);
  }

  /** A stack's policies by name. */
  async list(projectId: string, stackRef: string): Promise<ScalingPolicy[]> {
    const stack = await this.stacks.resolve(projectId, stackRef);
    const rows = await this.store.reader
      .selectFrom('scaling_policies')
      .innerJoin('scaling_groups', 'scaling_groups.id', 'scaling_policies.group_id')
      .selectAll('scaling_policies')
      .select('scaling_groups.name as group_name')
      .where('scaling_policies.stack_id', '=', stack.id)
      .orderBy('scaling_policies.name')
      .execute();
    return rows.map((row) => policyView(this.transport, row, stack, row.group_name));
  }

  /** One policy. */
  async show(projectId: string, stackRef: string, name: string): Promise<ScalingPolicy> {
    const { row, stack } = await this.find(projectId, stackRef, name);
    return policyView(this.transport, row, stack, await this.groupName(row.group_id));
  }

  /** Deletes a policy; its alarm URL and token stop working at once. */
  async delete(projectId: string, stackRef: string, name: string): Promise<void> {
    const { row: found, stack } = await this.find(projectId, stackRef, name);
    await this.store.write(async ({ trx, event }) => {
      const row = await this.current(trx, found, stack);
      if (row.access_key_id !== null) await trx.deleteFrom('resource_credentials').where('access_key_id', '=', row.access_key_id).execute();
      await trx.deleteFrom('scaling_policies').where('id', '=', row.id).execute();
      event(policyEvent(row, 'scaling_policy.deleted', `Scaling policy ${row.name} deleted; its alarm URL is revoked`));
    });
  }

  /** Issues a new access key (new alarm URL and token) and revokes the old one, optionally with an expiry. */
  async rotate(projectId: string, stackRef: string, name: string, body: ScalingPolicyRotate): Promise<ScalingPolicy> {
    const { row: found, stack } = await this.find(projectId, stackRef, name);
    const next = await this.store.write(async ({ trx, now, event }) => {
      // The key to revoke is the one stored now: a rotation that committed meanwhile must not leave its key alive.
      const row = await this.current(trx, found, stack);
      const updated: ScalingPolicyRow = {
        ...row,
        access_key_id: newAccessKeyId(this.transport.secrets),
        key_issued_at: now,
        urls_expire_at: expiry(now, body.url_expires_in),
      };
      if (row.access_key_id !== null) await trx.deleteFrom('resource_credentials').where('access_key_id', '=', row.access_key_id).execute();
      await trx
        .updateTable('scaling_policies')
        .set({ access_key_id: updated.access_key_id, key_issued_at: now, urls_expire_at: updated.urls_expire_at })
        .where('id', '=', row.id)
        .execute();
      await this.grant(trx, updated, now);
      event(policyEvent(row, 'scaling_policy.rotated', `Scaling policy ${row.name}: new alarm URL issued, the old one revoked`));
      return updated;
    });
    return policyView(this.transport, next, stack, await this.groupName(next.group_id));
  }

  /** Revokes the alarm URL and token; `rotate` issues new ones. */
  async revoke(projectId: string, stackRef: string, name: string): Promise<ScalingPolicy> {
    const { row: found, stack } = await this.find(projectId, stackRef, name);
    const row = await this.store.write(async ({ trx, event }) => {
      const current = await this.current(trx, found, stack);
      if (current.access_key_id !== null)
        await trx.deleteFrom('resource_credentials').where('access_key_id', '=', current.access_key_id).execute();
      await trx.updateTable('scaling_policies').set({ access_key_id: null }).where('id', '=', current.id).execute();
      event(policyEvent(current, 'scaling_policy.revoked', `Scaling policy ${current.name}: alarm URL and token revoked`));
      return current;
    });
    return policyView(this.transport, { ...row, access_key_id: null }, stack, await this.groupName(row.group_id));
  }

  /** The operator's manual signal, by name. */
  async signalByName(projectId: string, stackRef: string, name: string, body: unknown): Promise<ScalingSignalResult> {
    const { row } = await this.find(projectId, stackRef, name);
    return this.signal(row.id, body);
  }

  /**
   * Applies an alarm to a policy (the caller already proved its right to it): parses the payload,
   * then adjusts the group by Heat's math unless the payload says not to act, the group is in
   * cooldown or already scaling, or the capacity would not change. Every outcome is an event.
   * With `credential` (a guest's; the operator has none), the policy must still hold that key,
   * unexpired, in the transaction that writes: a revoke that has answered stops the signal.
   */
  async signal(policyId: string, body: unknown, credential?: PolicyCredential): Promise<ScalingSignalResult> {
    const policy = await this.store.reader.selectFrom('scaling_policies').selectAll().where('id', '=', policyId).executeTakeFirst();
    if (!policy) throw new HearthError('ERR_SCALING_POLICY_NOT_FOUND', { name: policyId, stack: '?' });
    const payload = parseAlarmPayload(body);
    const admit = async (trx: Transaction<Database>, now: string) => {
      const current = await trx.selectFrom('scaling_policies').select('access_key_id').where('id', '=', policyId).executeTakeFirst();
      if (!current) throw new HearthError('ERR_SCALING_POLICY_NOT_FOUND', { name: policy.name, stack: '(deleted meanwhile)' });
      if (credential === undefined) return;
      if (current.access_key_id !== credential.accessKeyId)
        throw new HearthError('ERR_SIGNED_URL_INVALID', {
          reason: 'the access key was revoked (the policy was revoked or rotated)',
          aws_code: 'InvalidClientTokenId',
        });
      // A key's expiry is set with the key: the same key still has the expiry the caller was checked against.
      if (credential.expiresAt !== null && credential.expiresAt <= now)
        throw new HearthError('ERR_SIGNED_URL_EXPIRED', { expired_at: heatTime(new Date(credential.expiresAt)) });
    };
    const record = async (trx: Transaction<Database>, now: string, outcome: string, reason: string) => {
      await trx
        .updateTable('scaling_policies')
        .set({ last_signal_at: now, last_signal_outcome: outcome, last_signal_reason: reason })
        .where('id', '=', policyId)
        .execute();
    };
    if (!shouldAct(payload, policy.act_only_on_alarm === 1)) {
      const reason = `${payload.reason}: not acted on (${payload.actionable ? `state ${payload.state} is not alarm` : 'the alarm resolved'})`;
      const capacity = await this.store.write(async ({ trx, now, event }) => {
        await admit(trx, now);
        const group = await trx
          .selectFrom('scaling_groups')
          .select('desired_capacity')
          .where('id', '=', policy.group_id)
          .executeTakeFirst();
        event(policyEvent(policy, 'scaling_policy.signal_ignored', reason, { source: payload.source, state: payload.state }));
        await record(trx, now, 'ignored', reason);
        return group?.desired_capacity ?? 0;
      });
      return { outcome: 'ignored', reason, previous_capacity: capacity, desired_capacity: capacity };
    }
    const type = policy.adjustment_type as AdjustmentType;
    const result = await this.adjuster.adjust(policy.group_id, {
      target: (group) =>
        newCapacity({
          current: group.desired_capacity,
          adjustmentType: type,
          adjustment: policy.scaling_adjustment,
          minAdjustmentStep: policy.min_adjustment_step,
          minSize: group.min_size,
          maxSize: group.max_size,
        }),
      cooldown: (group) => effectiveCooldown(policy.cooldown_s, group.cooldown_s),
      cooldownReason: `${type} : ${policy.scaling_adjustment}`,
      reason: `policy ${policy.name}: ${payload.reason}`,
      record,
      admit,
    });
    return { outcome: result.outcome, reason: result.reason, previous_capacity: result.previous, desired_capacity: result.desired };
  }

  private async grant(trx: Transaction<Database>, row: ScalingPolicyRow, now: string): Promise<void> {
    await trx
      .insertInto('resource_credentials')
      .values({
        access_key_id: row.access_key_id!,
        project_id: row.project_id,
        kind: POLICY_CREDENTIAL_KIND,
        target_id: row.id,
        created_at: now,
      })
      .execute();
  }

  private async find(projectId: string, stackRef: string, name: string): Promise<{ row: ScalingPolicyRow; stack: StackRow }> {
    const stack = await this.stacks.resolve(projectId, stackRef);
    const row = await this.store.reader
      .selectFrom('scaling_policies')
      .selectAll()
      .where('stack_id', '=', stack.id)
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) throw new HearthError('ERR_SCALING_POLICY_NOT_FOUND', { name, stack: stack.name });
    return { row, stack };
  }

  /** The policy as it is in the write transaction, or ERR_SCALING_POLICY_NOT_FOUND when it was deleted since it was found. */
  private async current(trx: Transaction<Database>, found: ScalingPolicyRow, stack: StackRow): Promise<ScalingPolicyRow> {
    const row = await trx.selectFrom('scaling_policies').selectAll().where('id', '=', found.id).executeTakeFirst();
    if (!row) throw new HearthError('ERR_SCALING_POLICY_NOT_FOUND', { name: found.name, stack: stack.name });
    return row;
  }

  private async groupName(groupId: string): Promise<string> {
    const group = await this.store.reader.selectFrom('scaling_groups').select('name').where('id', '=', groupId).executeTakeFirst();
    return group?.name ?? '';
  }
}

function expiry(now: string, seconds: number | undefined): string | null {
  return seconds === undefined ? null : new Date(Date.parse(now) + seconds * 1000).toISOString();
}

function describe(row: ScalingPolicyRow): string {
  return `${row.adjustment_type} ${row.scaling_adjustment}${row.min_adjustment_step ? ` (min step ${row.min_adjustment_step})` : ''}`;
}

function policyEvent(row: ScalingPolicyRow, type: string, message: string, data: Record<string, unknown> = {}) {
  const resource = { project_id: row.project_id, resource_type: 'scaling_policy', resource_id: row.id, server_id: null };
  return resourceEvent(resource, type, message, { policy: row.name, ...data });
}
