import type { AdjustmentType } from '@hearth/protocol';
import type { ScalingMethods } from '@hearth/client';
import { usageError } from '../errors.ts';
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

/** The scaling calls of the session's client (hearth's client has them all). */
export function scalingClient(session: Session): ScalingMethods {
  return session.client();
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
