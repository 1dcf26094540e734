import { Type, type Static } from 'typebox';
import { JsonObject, ServerId, Timestamp } from './common.ts';
import { ResourceName } from './stack.ts';
import { ConfigTransport } from './server.ts';

/** Largest `max_size` a scaling group may have. */
export const MAX_SCALING_GROUP_SIZE = 10000;
/** Longest cooldown in seconds (one day). */
export const MAX_SCALING_COOLDOWN = 86400;

/** Heat's adjustment types (`OS::Heat::ScalingPolicy`), §6.3 of the reference. */
export const ADJUSTMENT_TYPES = ['change_in_capacity', 'exact_capacity', 'percent_change_in_capacity'] as const;
export type AdjustmentType = (typeof ADJUSTMENT_TYPES)[number];
export const AdjustmentTypeSchema = Type.Union([
  Type.Literal('change_in_capacity'),
  Type.Literal('exact_capacity'),
  Type.Literal('percent_change_in_capacity'),
]);

/**
 * Header names of an actuator webhook. The signature is `sha256=<hex>` where hex is
 * HMAC-SHA256(actuator secret, `<timestamp>.<raw body>`) and timestamp is the Unix seconds in
 * `X-Hearth-Timestamp`; a receiver recomputes it and refuses stale timestamps.
 */
export const ACTUATOR_HEADERS = {
  signature: 'x-hearth-signature',
  timestamp: 'x-hearth-timestamp',
  delivery: 'x-hearth-delivery',
  event: 'x-hearth-event',
} as const;

/** Where desired-capacity changes go: a URL hearth POSTs to, and the HMAC secret (default: one hearth derives and shows once). */
export const Actuator = Type.Object(
  {
    url: Type.String({ minLength: 8, maxLength: 2048, pattern: '^https?://' }),
    secret: Type.Optional(Type.String({ minLength: 16, maxLength: 256 })),
  },
  { additionalProperties: false },
);
export type Actuator = Static<typeof Actuator>;

/**
 * With member_bootstrap, every new member gets a server record and a ready agent credential in the
 * webhook. It is named (as server and as resource) `{group name}-{8 hex digits}`, the group name cut
 * to its first 246 characters so the name fits in 255.
 */
export const MemberBootstrap = Type.Object(
  {
    /** How the new members' agents fetch metadata (default HEARTH_LONG_POLL). */
    software_config_transport: Type.Optional(ConfigTransport),
  },
  { additionalProperties: false },
);
export type MemberBootstrap = Static<typeof MemberBootstrap>;

const Size = Type.Integer({ minimum: 0, maximum: MAX_SCALING_GROUP_SIZE });
const Cooldown = Type.Integer({ minimum: 0, maximum: MAX_SCALING_COOLDOWN });

/** POST /v1/{project}/stacks/{stack}/scaling_groups. Heat's rules: max ≥ min ≥ 0, desired (default min) within them. */
export const ScalingGroupCreate = Type.Object(
  {
    name: ResourceName,
    min_size: Size,
    max_size: Size,
    desired_capacity: Type.Optional(Size),
    /** Seconds after a change during which policies change nothing (default 0). */
    cooldown: Type.Optional(Cooldown),
    actuator: Actuator,
    member_bootstrap: Type.Optional(MemberBootstrap),
  },
  { additionalProperties: false },
);
export type ScalingGroupCreate = Static<typeof ScalingGroupCreate>;

/** A new actuator URL, secret, or both (what is not given stays). */
export const ActuatorUpdate = Type.Object(
  {
    url: Type.Optional(Actuator.properties.url),
    secret: Type.Optional(Type.String({ minLength: 16, maxLength: 256 })),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type ActuatorUpdate = Static<typeof ActuatorUpdate>;

/**
 * PATCH .../scaling_groups/{name}: new bounds; desired capacity is clamped to them (or set, within them).
 * A new `actuator` (URL and/or secret) is used from the next attempt on; a pending delivery is tried at
 * once, and with none pending, members no delivery has carried get one of their own.
 */
export const ScalingGroupUpdate = Type.Object(
  {
    min_size: Type.Optional(Size),
    max_size: Type.Optional(Size),
    desired_capacity: Type.Optional(Size),
    cooldown: Type.Optional(Cooldown),
    actuator: Type.Optional(ActuatorUpdate),
  },
  { additionalProperties: false },
);
export type ScalingGroupUpdate = Static<typeof ScalingGroupUpdate>;

/** POST .../scaling_groups/{name}/members: servers (by id) the provisioner registered or removed. */
export const ScalingMembersChange = Type.Object(
  {
    add: Type.Optional(Type.Array(ServerId, { maxItems: 1000 })),
    remove: Type.Optional(Type.Array(ServerId, { maxItems: 1000 })),
  },
  { additionalProperties: false },
);
export type ScalingMembersChange = Static<typeof ScalingMembersChange>;

/** A member of a group: a server, and whether hearth created its record (member_bootstrap). */
export const ScalingMember = Type.Object({
  server_id: Type.String(),
  bootstrap: Type.Boolean(),
  added_time: Timestamp,
});
export type ScalingMember = Static<typeof ScalingMember>;

/**
 * The actuator outbox of a group: `pending` deliveries (retried until a 2xx); `failed`, those of them with a
 * failed attempt plus those failed for good (a redirect, or a URL the outbound rule refuses: never retried);
 * `undelivered_members`, members hearth made whose credential no delivery has carried with a 2xx (their
 * delivery failed for good): the next delivery that succeeds carries them in `new_members`.
 */
export const ActuatorDeliveries = Type.Object({
  pending: Type.Integer(),
  failed: Type.Integer(),
  delivered: Type.Integer(),
  undelivered_members: Type.Integer(),
  last_error: Type.Union([Type.String(), Type.Null()]),
  next_attempt: Type.Union([Timestamp, Type.Null()]),
});
export type ActuatorDeliveries = Static<typeof ActuatorDeliveries>;

/** A scaling group as the native API returns it. */
export const ScalingGroup = Type.Object({
  id: Type.String(),
  name: Type.String(),
  stack_id: Type.String(),
  stack_name: Type.String(),
  min_size: Type.Integer(),
  max_size: Type.Integer(),
  desired_capacity: Type.Integer(),
  /** Members registered now (the provisioner catches up with `desired_capacity`). */
  current_size: Type.Integer(),
  members: Type.Array(ScalingMember),
  cooldown: Type.Integer(),
  cooldown_end: Type.Union([Timestamp, Type.Null()]),
  cooldown_reason: Type.Union([Type.String(), Type.Null()]),
  /** Set while a change is being applied; a lease, so a crash cannot leave it set for ever. */
  scaling_in_progress: Type.Boolean(),
  last_activity: Type.Union([Type.Object({ time: Timestamp, reason: Type.String() }), Type.Null()]),
  actuator: Type.Object({ url: Type.String() }),
  member_bootstrap: Type.Union([MemberBootstrap, Type.Null()]),
  deliveries: ActuatorDeliveries,
  creation_time: Timestamp,
  updated_time: Type.Union([Timestamp, Type.Null()]),
});
export type ScalingGroup = Static<typeof ScalingGroup>;

/** The create reply: the group, and the actuator secret when hearth made it (shown this once). */
export const ScalingGroupCreated = Type.Object({
  scaling_group: ScalingGroup,
  actuator_secret: Type.Union([Type.String(), Type.Null()]),
});
export type ScalingGroupCreated = Static<typeof ScalingGroupCreated>;

/**
 * POST .../scaling_policies. Heat's properties; `min_adjustment_step` only with the percent type.
 * Beyond Heat: `act_only_on_alarm` (act only when the payload says alarm/firing, Heat's pre-2016
 * rule) and `url_expires_in` (the alarm URL and token stop working after that many seconds).
 */
export const ScalingPolicyCreate = Type.Object(
  {
    name: ResourceName,
    group: ResourceName,
    adjustment_type: AdjustmentTypeSchema,
    scaling_adjustment: Type.Integer({ minimum: -MAX_SCALING_GROUP_SIZE * 100, maximum: MAX_SCALING_GROUP_SIZE * 100 }),
    min_adjustment_step: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_SCALING_GROUP_SIZE })),
    cooldown: Type.Optional(Cooldown),
    act_only_on_alarm: Type.Optional(Type.Boolean()),
    url_expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 * 365 * 24 * 3600 })),
  },
  { additionalProperties: false },
);
export type ScalingPolicyCreate = Static<typeof ScalingPolicyCreate>;

/** POST .../scaling_policies/{name}/rotate: a new access key (the old URLs stop at once), optionally with an expiry. */
export const ScalingPolicyRotate = Type.Object(
  { url_expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 * 365 * 24 * 3600 })) },
  { additionalProperties: false },
);
export type ScalingPolicyRotate = Static<typeof ScalingPolicyRotate>;

/** A scaling policy as the native API returns it. URLs are null once revoked. */
export const ScalingPolicy = Type.Object({
  id: Type.String(),
  name: Type.String(),
  group: Type.String(),
  stack_id: Type.String(),
  stack_name: Type.String(),
  arn: Type.String(),
  adjustment_type: AdjustmentTypeSchema,
  scaling_adjustment: Type.Integer(),
  min_adjustment_step: Type.Union([Type.Integer(), Type.Null()]),
  cooldown: Type.Union([Type.Integer(), Type.Null()]),
  act_only_on_alarm: Type.Boolean(),
  /** Pre-signed `POST /v1/signal/{arn}` (EC2 signature v2): give it to Aodh or Alertmanager as the webhook. */
  alarm_url: Type.Union([Type.String(), Type.Null()]),
  /** Native resource signal endpoint; send `X-Auth-Token: signal_token`. */
  signal_url: Type.Union([Type.String(), Type.Null()]),
  signal_token: Type.Union([Type.String(), Type.Null()]),
  expires_at: Type.Union([Timestamp, Type.Null()]),
  revoked: Type.Boolean(),
  last_signal: Type.Union([Type.Object({ time: Timestamp, outcome: Type.String(), reason: Type.String() }), Type.Null()]),
  creation_time: Timestamp,
});
export type ScalingPolicy = Static<typeof ScalingPolicy>;

/** What a signal to a policy did: `adjusted`, or why it changed nothing. */
export const SCALING_OUTCOMES = ['adjusted', 'cooldown', 'in_progress', 'no_change', 'ignored'] as const;
export type ScalingOutcome = (typeof SCALING_OUTCOMES)[number];

/** The answer to a manual signal (`POST .../scaling_policies/{name}/signal`). */
export const ScalingSignalResult = Type.Object({
  outcome: Type.Union([
    Type.Literal('adjusted'),
    Type.Literal('cooldown'),
    Type.Literal('in_progress'),
    Type.Literal('no_change'),
    Type.Literal('ignored'),
  ]),
  reason: Type.String(),
  previous_capacity: Type.Integer(),
  desired_capacity: Type.Integer(),
});
export type ScalingSignalResult = Static<typeof ScalingSignalResult>;

/** A new member in a webhook: its server record and, while it exists, its ready agent credential and collector config. */
export const ActuatorNewMember = Type.Object({
  server_id: Type.String(),
  name: Type.String(),
  credential: Type.Union([
    Type.Object({ access_key_id: Type.String(), secret_access_key: Type.String(), token: Type.String(), metadata_url: Type.String() }),
    Type.Null(),
  ]),
  os_collect_config: Type.Union([JsonObject, Type.Null()]),
  os_collect_config_conf: Type.Union([Type.String(), Type.Null()]),
});
export type ActuatorNewMember = Static<typeof ActuatorNewMember>;

/** The JSON body hearth POSTs to a group's actuator on every change of desired capacity. */
export const ActuatorWebhook = Type.Object({
  delivery_id: Type.String(),
  /** 1, 2, … per group: deliveries arrive in this order, each once acknowledged with a 2xx. */
  sequence: Type.Integer(),
  time: Timestamp,
  group: Type.Object({
    id: Type.String(),
    name: Type.String(),
    project_id: Type.String(),
    stack_id: Type.String(),
    stack_name: Type.String(),
  }),
  previous_capacity: Type.Integer(),
  desired_capacity: Type.Integer(),
  min_size: Type.Integer(),
  max_size: Type.Integer(),
  reason: Type.String(),
  /** Member server ids when the change was made, oldest first. */
  members: Type.Array(Type.String()),
  /** On a scale-down: the members to remove, oldest first. */
  remove_candidates: Type.Array(Type.String()),
  /**
   * The members this change added, after those of earlier changes whose delivery failed for good (no
   * delivery carried them with a 2xx yet): each member's credential comes until one delivery carrying it succeeds.
   */
  new_members: Type.Array(ActuatorNewMember),
});
export type ActuatorWebhook = Static<typeof ActuatorWebhook>;
