import { Type, type Static } from 'typebox';
import { Timestamp } from './common.ts';

/** Largest signal body accepted, in bytes (Heat's max_json_body_size). */
export const MAX_SIGNAL_BYTES = 1024 * 1024;

/**
 * A deployment signal: a hook's result. `deploy_stdout`, `deploy_stderr` and
 * `deploy_status_code` are reserved; every other key is a named output (undeclared ones are dropped).
 */
export const DeploymentSignal = Type.Object(
  {
    deploy_stdout: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    deploy_stderr: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    deploy_status_code: Type.Optional(Type.Union([Type.Integer(), Type.String({ maxLength: 64 }), Type.Null()])),
  },
  { additionalProperties: true },
);
export type DeploymentSignal = Static<typeof DeploymentSignal> & Record<string, unknown>;

/** Reply to an accepted signal; `duplicate` is true when the same signal had been applied before. */
export const SignalAck = Type.Object({
  deployment_id: Type.String(),
  status: Type.String(),
  status_reason: Type.Union([Type.String(), Type.Null()]),
  duplicate: Type.Boolean(),
});
export type SignalAck = Static<typeof SignalAck>;

/** A heartbeat: the hook is still working. Extends the deployment's deadline. */
export const Heartbeat = Type.Object(
  {
    message: Type.Optional(Type.String({ maxLength: 4096 })),
    progress: Type.Optional(Type.Number({ minimum: 0, maximum: 100 })),
  },
  { additionalProperties: false },
);
export type Heartbeat = Static<typeof Heartbeat>;

/** Reply to a heartbeat: the new deadline. */
export const HeartbeatAck = Type.Object({ deployment_id: Type.String(), deadline: Timestamp });
export type HeartbeatAck = Static<typeof HeartbeatAck>;
