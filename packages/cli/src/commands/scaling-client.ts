import type {
  AdjustmentType,
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
import { ExitError, EXIT, usageError } from '../errors.ts';
import type { Session } from '../session.ts';
import { RESOURCE_NAME_PATTERN } from '../protocol-values.ts';

// Copies of the protocol values the scaling commands need at run time (importing @hearth/protocol
// would load TypeBox on every command); scaling.test.ts checks each equals the protocol's.

/** Heat's adjustment types (protocol ADJUSTMENT_TYPES). */
export const ADJUSTMENT_TYPES: readonly AdjustmentType[] = ['change_in_capacity', 'exact_capacity', 'percent_change_in_capacity'];
/** Largest group size (protocol MAX_SCALING_GROUP_SIZE). */
export const MAX_SCALING_GROUP_SIZE = 10000;
/** Longest cooldown in seconds (protocol MAX_SCALING_COOLDOWN). */
export const MAX_SCALING_COOLDOWN = 86400;

/** The client calls the scaling commands make: @hearth/client's ScalingMethods. */
export interface ScalingCalls {
  createScalingGroup(stack: string, body: ScalingGroupCreate): Promise<ScalingGroupCreated>;
  listScalingGroups(stack: string): Promise<ScalingGroup[]>;
  getScalingGroup(stack: string, name: string): Promise<ScalingGroup>;
  updateScalingGroup(stack: string, name: string, body: ScalingGroupUpdate): Promise<ScalingGroup>;
  deleteScalingGroup(stack: string, name: string): Promise<void>;
  listScalingMembers(stack: string, name: string): Promise<ScalingMember[]>;
  changeScalingMembers(stack: string, name: string, body: ScalingMembersChange): Promise<ScalingGroup>;
  createScalingPolicy(stack: string, body: ScalingPolicyCreate): Promise<ScalingPolicy>;
  listScalingPolicies(stack: string): Promise<ScalingPolicy[]>;
  getScalingPolicy(stack: string, name: string): Promise<ScalingPolicy>;
  deleteScalingPolicy(stack: string, name: string): Promise<void>;
  rotateScalingPolicy(stack: string, name: string, body?: ScalingPolicyRotate): Promise<ScalingPolicy>;
  revokeScalingPolicy(stack: string, name: string): Promise<ScalingPolicy>;
  signalScalingPolicy(stack: string, name: string, payload?: unknown): Promise<ScalingSignalResult>;
}

const CALLS: ReadonlyArray<keyof ScalingCalls> = ['createScalingGroup', 'getScalingPolicy', 'signalScalingPolicy'];

/** The session's client as scaling calls, or an internal error when the client in use has no scaling methods. */
export function scalingClient(session: Session): ScalingCalls {
  const client: unknown = session.client();
  const record = client as Record<string, unknown>;
  if (CALLS.every((name) => typeof record[name] === 'function')) return client as ScalingCalls;
  throw new ExitError(EXIT.FAILED, 'this hearth client has no scaling methods', {
    hint: "@hearth/client's createClient must spread scalingMethods(transport)",
    code: 'ERR_CLIENT_UNSUPPORTED',
  });
}

/** Parses a whole number in min..max (negative allowed when min < 0) for `flag`; throws a usage error. */
export function parseInteger(text: string, flag: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(value) || value < min || value > max) {
    throw usageError(`${flag} ${JSON.stringify(text)} is not a whole number from ${min} to ${max}`);
  }
  return value;
}

/** Checks a group or policy name as the server will (letters, digits, `_ . : -`); throws a usage error. */
export function checkScalingName(kind: 'scaling group' | 'scaling policy', name: string): string {
  if (!RESOURCE_NAME_PATTERN.test(name)) {
    throw usageError(
      `${kind} name ${JSON.stringify(name)} is not valid`,
      "use 1-255 letters, digits, '_', '.', ':' or '-' (no '/' or spaces)",
    );
  }
  return name;
}
