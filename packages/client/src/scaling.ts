import type {
  ScalingGroup,
  ScalingGroupCreate,
  ScalingGroupCreated,
  ScalingGroupUpdate,
  ScalingMember,
  ScalingMembersChange,
  ScalingPolicy,
  ScalingPolicyCreate,
  ScalingPolicyRotate,
  ScalingSignalResult,
} from '@hearth/protocol';
import type { Transport } from './http.ts';
import { projectPath } from './paths.ts';
import { callForField, envelopeField } from './reply.ts';

/** Operator calls on a stack's scaling groups and policies; `stack` is the stack's name or id. */
export interface ScalingMethods {
  /** Creates a group; `actuator_secret` is set (this once) when hearth made the secret. */
  createScalingGroup(stack: string, body: ScalingGroupCreate): Promise<ScalingGroupCreated>;
  /** Lists the stack's groups. */
  listScalingGroups(stack: string): Promise<ScalingGroup[]>;
  /** Fetches one group with its members and actuator deliveries. */
  getScalingGroup(stack: string, name: string): Promise<ScalingGroup>;
  /** New bounds, cooldown or desired capacity (clamped to the bounds). */
  updateScalingGroup(stack: string, name: string, body: ScalingGroupUpdate): Promise<ScalingGroup>;
  /** Deletes a group (refused with ERR_SCALING_GROUP_HAS_POLICIES while policies point at it). */
  deleteScalingGroup(stack: string, name: string): Promise<void>;
  /** The group's members, oldest first. */
  listScalingMembers(stack: string, name: string): Promise<ScalingMember[]>;
  /** Adds and removes members (server ids). */
  changeScalingMembers(stack: string, name: string, body: ScalingMembersChange): Promise<ScalingGroup>;
  /** Creates a policy; the reply carries its `alarm_url`, `signal_url` and `signal_token`. */
  createScalingPolicy(stack: string, body: ScalingPolicyCreate): Promise<ScalingPolicy>;
  /** Lists the stack's policies. */
  listScalingPolicies(stack: string): Promise<ScalingPolicy[]>;
  /** Fetches one policy. */
  getScalingPolicy(stack: string, name: string): Promise<ScalingPolicy>;
  /** Deletes a policy; its URLs stop working. */
  deleteScalingPolicy(stack: string, name: string): Promise<void>;
  /** Issues new URLs (the old ones stop at once), optionally expiring. */
  rotateScalingPolicy(stack: string, name: string, body?: ScalingPolicyRotate): Promise<ScalingPolicy>;
  /** Revokes the policy's URLs and token. */
  revokeScalingPolicy(stack: string, name: string): Promise<ScalingPolicy>;
  /** Signals a policy by hand (any alarm payload, default none); answers what it did. */
  signalScalingPolicy(stack: string, name: string, payload?: unknown): Promise<ScalingSignalResult>;
}

/** Builds the scaling methods on a transport. */
export function scalingMethods(transport: Transport): ScalingMethods {
  const { project } = transport.options;
  const groups = (stack: string, ...rest: string[]): string => projectPath(project, 'stacks', stack, 'scaling_groups', ...rest);
  const policies = (stack: string, ...rest: string[]): string => projectPath(project, 'stacks', stack, 'scaling_policies', ...rest);
  const group = 'scaling_group';
  const policy = 'scaling_policy';
  return {
    async createScalingGroup(stack, body) {
      const spec = { method: 'POST', path: groups(stack), auth: 'operator', json: body } as const;
      const reply = await transport.call(spec);
      return {
        scaling_group: envelopeField<ScalingGroup>(reply, group, spec),
        actuator_secret: envelopeField<string | null>(reply, 'actuator_secret', spec, 'string-or-null'),
      };
    },
    listScalingGroups: (stack) =>
      callForField<ScalingGroup[]>(transport, { method: 'GET', path: groups(stack), auth: 'operator' }, 'scaling_groups'),
    getScalingGroup: (stack, name) =>
      callForField<ScalingGroup>(transport, { method: 'GET', path: groups(stack, name), auth: 'operator' }, group),
    updateScalingGroup: (stack, name, body) =>
      callForField<ScalingGroup>(transport, { method: 'PATCH', path: groups(stack, name), auth: 'operator', json: body }, group),
    async deleteScalingGroup(stack, name) {
      await transport.call({ method: 'DELETE', path: groups(stack, name), auth: 'operator' });
    },
    listScalingMembers: (stack, name) =>
      callForField<ScalingMember[]>(transport, { method: 'GET', path: groups(stack, name, 'members'), auth: 'operator' }, 'members'),
    changeScalingMembers: (stack, name, body) =>
      callForField<ScalingGroup>(transport, { method: 'POST', path: groups(stack, name, 'members'), auth: 'operator', json: body }, group),
    createScalingPolicy: (stack, body) =>
      callForField<ScalingPolicy>(transport, { method: 'POST', path: policies(stack), auth: 'operator', json: body }, policy),
    listScalingPolicies: (stack) =>
      callForField<ScalingPolicy[]>(transport, { method: 'GET', path: policies(stack), auth: 'operator' }, 'scaling_policies'),
    getScalingPolicy: (stack, name) =>
      callForField<ScalingPolicy>(transport, { method: 'GET', path: policies(stack, name), auth: 'operator' }, policy),
    async deleteScalingPolicy(stack, name) {
      await transport.call({ method: 'DELETE', path: policies(stack, name), auth: 'operator' });
    },
    rotateScalingPolicy: (stack, name, body = {}) =>
      callForField<ScalingPolicy>(
        transport,
        { method: 'POST', path: policies(stack, name, 'rotate'), auth: 'operator', json: body },
        policy,
      ),
    revokeScalingPolicy: (stack, name) =>
      callForField<ScalingPolicy>(transport, { method: 'POST', path: policies(stack, name, 'revoke'), auth: 'operator' }, policy),
    signalScalingPolicy: (stack, name, payload) =>
      callForField<ScalingSignalResult>(
        transport,
        { method: 'POST', path: policies(stack, name, 'signal'), auth: 'operator', ...(payload === undefined ? {} : { json: payload }) },
        'result',
      ),
  };
}
