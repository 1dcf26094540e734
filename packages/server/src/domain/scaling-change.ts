// What a change of a scaling group's desired capacity is, for the code that makes one (scaling-adjust.ts,
// scaling-bootstrap.ts) and the code that asks for one or shows it: its request and result, its feed
// topics and its events.
import type { MemberBootstrap, ScalingOutcome } from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Database } from '../store/schema.ts';
import type { ScalingGroupRow } from '../store/schema-scaling.ts';
import { resourceEvent } from './events.ts';

/** Feed topics of scaling: one group changed; the actuator outbox has new work. */
export const scalingTopics = {
  group: (id: string) => `scaling-group:${id}`,
  outbox: 'actuator-outbox',
} as const;

/** How long the "scaling in progress" lease lasts: a crash mid-change blocks the group at most this long. */
export const SCALING_LEASE_MS = 60_000;

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

/** The member_bootstrap settings of a group, or null. */
export function bootstrapOf(group: ScalingGroupRow): MemberBootstrap | null {
  return group.member_bootstrap === null ? null : (JSON.parse(group.member_bootstrap) as MemberBootstrap);
}

/** An event row about a scaling group. */
export function groupEvent(group: ScalingGroupRow, type: string, message: string, data: Record<string, unknown> = {}) {
  const resource = { project_id: group.project_id, resource_type: 'scaling_group', resource_id: group.id, server_id: null };
  return resourceEvent(resource, type, message, { group: group.name, ...data });
}
