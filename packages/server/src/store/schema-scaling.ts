import type { ColumnType, Generated, Selectable } from 'kysely';

/** Tables of migration 0003_scaling (scaling groups, members, policies, actuator deliveries) and 0011, as Kysely sees them. */
export interface ScalingTables {
  scaling_groups: ScalingGroupsTable;
  scaling_members: ScalingMembersTable;
  scaling_policies: ScalingPoliciesTable;
  actuator_deliveries: ActuatorDeliveriesTable;
}

export interface ScalingGroupsTable {
  id: string;
  project_id: string;
  stack_id: string;
  name: string;
  min_size: number;
  max_size: number;
  desired_capacity: number;
  cooldown_s: number;
  cooldown_end_at: string | null;
  cooldown_reason: string | null;
  /** Who holds the "scaling in progress" lease, and until when (a crash lets it lapse). */
  scaling_lease_id: string | null;
  scaling_lease_until: string | null;
  last_activity_at: string | null;
  last_activity_reason: string | null;
  actuator_url: string;
  /** The actuator secret sealed with a key derived from the master key. */
  actuator_secret_sealed: string;
  /** JSON of MemberBootstrap, or null. */
  member_bootstrap: string | null;
  /** The sequence number the next actuator delivery gets. */
  next_sequence: number;
  created_at: string;
  updated_at: string | null;
}

export interface ScalingMembersTable {
  group_id: string;
  server_id: string;
  /** 1 when hearth created the server record (member_bootstrap); 2 while such a record is reserved, not yet a member (scaling-bootstrap.ts). */
  bootstrap: number;
  added_at: string;
  /**
   * A member hearth made (member_bootstrap) whose credential no delivery has carried with a 2xx yet: the
   * sequence of the change that added it (every later delivery carries it too). Null once one has, and
   * for members the provisioner added (0011_scaling_undelivered_members).
   */
  undelivered_sequence: ColumnType<number | null, number | null | undefined, number | null>;
}

export interface ScalingPoliciesTable {
  id: string;
  project_id: string;
  stack_id: string;
  group_id: string;
  name: string;
  adjustment_type: string;
  scaling_adjustment: number;
  min_adjustment_step: number | null;
  cooldown_s: number | null;
  act_only_on_alarm: number;
  /** Null once revoked. */
  access_key_id: string | null;
  /** When the current access key was issued (the alarm URL's signing time). */
  key_issued_at: string;
  urls_expire_at: string | null;
  last_signal_at: string | null;
  last_signal_outcome: string | null;
  last_signal_reason: string | null;
  created_at: string;
}

export interface ActuatorDeliveriesTable {
  id: Generated<number>;
  delivery_id: string;
  group_id: string;
  sequence: number;
  /** The ActuatorWebhook JSON without secrets (new members' credentials are derived at send time). */
  payload: string;
  /** pending | delivered | failed (for good: never retried) */
  status: string;
  attempts: number;
  next_attempt_at: string;
  last_error: string | null;
  /** While a deliverer is POSTing it: until when its claim holds. */
  claimed_until: string | null;
  created_at: string;
  delivered_at: string | null;
}

export type ScalingGroupRow = Selectable<ScalingGroupsTable>;
export type ScalingMemberRow = Selectable<ScalingMembersTable>;
export type ScalingPolicyRow = Selectable<ScalingPoliciesTable>;
export type ActuatorDeliveryRow = Selectable<ActuatorDeliveriesTable>;
