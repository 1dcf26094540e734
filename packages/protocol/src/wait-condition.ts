import { Type, type Static } from 'typebox';
import { JsonValue, Timestamp } from './common.ts';
import { ResourceName } from './stack.ts';

/** Smallest and largest wait-condition timeout in seconds (Heat's range). */
export const MIN_WAIT_CONDITION_TIMEOUT = 1;
export const MAX_WAIT_CONDITION_TIMEOUT = 43200;
/** Most signals a wait condition can wait for. */
export const MAX_WAIT_CONDITION_COUNT = 1000;

export const WAIT_CONDITION_STATUSES = ['IN_PROGRESS', 'COMPLETE', 'FAILED'] as const;
export type WaitConditionStatus = (typeof WAIT_CONDITION_STATUSES)[number];

/**
 * POST /v1/{project}/stacks/{stack}/wait_conditions. Heat's `count` and `timeout`, plus a failure
 * policy (beyond Heat, where one FAILURE fails the condition at once): tolerate up to
 * `max_failures` FAILURE signals, and/or succeed once `count` signals arrived of which at least
 * `min_success_percent` are SUCCESS.
 */
export const WaitConditionCreate = Type.Object(
  {
    name: ResourceName,
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WAIT_CONDITION_COUNT })),
    timeout: Type.Integer({ minimum: MIN_WAIT_CONDITION_TIMEOUT, maximum: MAX_WAIT_CONDITION_TIMEOUT }),
    max_failures: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_WAIT_CONDITION_COUNT })),
    min_success_percent: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    /** Seconds after which the handle URLs stop working (beyond Heat; default: they live as long as the condition). */
    url_expires_in: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 * 365 * 24 * 3600 })),
  },
  { additionalProperties: false },
);
export type WaitConditionCreate = Static<typeof WaitConditionCreate>;

/**
 * Most characters in a signal id (a CFN `UniqueId`, a Heat handle's `id`): the store's signal id
 * column holds 255 (Heat sets no limit). A longer id is a 400 ERR_SIGNAL_INVALID.
 */
export const MAX_WAIT_CONDITION_SIGNAL_ID_LENGTH = 255;
const SignalId = Type.String({ minLength: 1, maxLength: MAX_WAIT_CONDITION_SIGNAL_ID_LENGTH });

/** CFN handle signal body (`AWS::CloudFormation::WaitConditionHandle`): all four keys, no others. */
export const CfnWaitConditionSignal = Type.Object(
  {
    Status: Type.Union([Type.Literal('SUCCESS'), Type.Literal('FAILURE')]),
    Reason: Type.String({ maxLength: 4096 }),
    UniqueId: SignalId,
    Data: Type.String({ maxLength: 65536 }),
  },
  { additionalProperties: false },
);
export type CfnWaitConditionSignal = Static<typeof CfnWaitConditionSignal>;

/** Heat handle signal body (`OS::Heat::WaitConditionHandle`): all optional, no other keys. */
export const HeatWaitConditionSignal = Type.Object(
  {
    status: Type.Optional(Type.Union([Type.Literal('SUCCESS'), Type.Literal('FAILURE')])),
    reason: Type.Optional(Type.Union([Type.String({ maxLength: 4096 }), Type.Null()])),
    data: Type.Optional(JsonValue),
    id: Type.Optional(Type.Union([SignalId, Type.Integer()])),
  },
  { additionalProperties: false },
);
export type HeatWaitConditionSignal = Static<typeof HeatWaitConditionSignal>;

/** One stored signal. A repeated id replaces the earlier one. */
export const WaitConditionSignalRecord = Type.Object({
  id: Type.String(),
  status: Type.Union([Type.Literal('SUCCESS'), Type.Literal('FAILURE')]),
  reason: Type.Union([Type.String(), Type.Null()]),
  data: JsonValue,
  time: Timestamp,
});
export type WaitConditionSignalRecord = Static<typeof WaitConditionSignalRecord>;

/** How a VM signals the condition: every form Heat offers for its two handle types. */
export const WaitConditionHandle = Type.Object({
  /** Pre-signed CFN URL (`PUT`, EC2 signature v2): the Ref of an AWS::CloudFormation::WaitConditionHandle; for cfn-signal. */
  cfn_url: Type.String(),
  /** Native signal endpoint (`POST` with `X-Auth-Token: token`), as OS::Heat::WaitConditionHandle's `endpoint`. */
  endpoint: Type.String(),
  /** Token for `endpoint`; reaches only this wait condition. */
  token: Type.String(),
  /** Ready curl command; append `--data-binary '{"status": "SUCCESS"}'`. */
  curl_cli: Type.String(),
  /** Capability URL (no header needed): `POST` a Heat-style body. */
  signal_url: Type.String(),
  expires_at: Type.Union([Timestamp, Type.Null()]),
});
export type WaitConditionHandle = Static<typeof WaitConditionHandle>;

/** A wait condition as the native API returns it. */
export const WaitCondition = Type.Object({
  name: Type.String(),
  stack_id: Type.String(),
  stack_name: Type.String(),
  arn: Type.String(),
  count: Type.Integer(),
  timeout: Type.Integer(),
  max_failures: Type.Integer(),
  min_success_percent: Type.Union([Type.Integer(), Type.Null()]),
  status: Type.Union([Type.Literal('IN_PROGRESS'), Type.Literal('COMPLETE'), Type.Literal('FAILED')]),
  status_reason: Type.Union([Type.String(), Type.Null()]),
  received: Type.Integer(),
  successes: Type.Integer(),
  failures: Type.Integer(),
  /** Heat's `data` attribute as an object: signal id → data. */
  data: Type.Record(Type.String(), JsonValue),
  signals: Type.Array(WaitConditionSignalRecord),
  deadline: Timestamp,
  creation_time: Timestamp,
  updated_time: Type.Union([Timestamp, Type.Null()]),
  handle: WaitConditionHandle,
});
export type WaitCondition = Static<typeof WaitCondition>;

/** Wait-condition heartbeat (beyond Heat): extends the deadline by `extend` seconds (default: the timeout). */
export const WaitConditionHeartbeat = Type.Object(
  {
    extend: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_WAIT_CONDITION_TIMEOUT })),
    message: Type.Optional(Type.String({ maxLength: 4096 })),
  },
  { additionalProperties: false },
);
export type WaitConditionHeartbeat = Static<typeof WaitConditionHeartbeat>;
