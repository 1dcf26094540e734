import type { AdjustmentType } from '@hearth/protocol';

/** What one adjustment needs: the capacity it starts from and the group's bounds. */
export interface CapacityInput {
  /** The capacity the adjustment starts from. */
  current: number;
  adjustmentType: AdjustmentType;
  /** The policy's `scaling_adjustment` (a count, a capacity, or a percentage). */
  adjustment: number;
  /** Smallest change a percent adjustment makes (Heat's `min_adjustment_step`); null or 0 = none. */
  minAdjustmentStep: number | null;
  minSize: number;
  maxSize: number;
}

/**
 * Heat's capacity math (reference/server.md §6.3, heat/scaling/scalingutil.py): change adds, exact
 * sets, percent adds `current * adjustment / 100` rounded away from zero below one and truncated
 * toward zero from one up, raised to `min_adjustment_step`; the result is clamped to the bounds.
 */
export function newCapacity(input: CapacityInput): number {
  const { current, adjustment } = input;
  let target: number;
  switch (input.adjustmentType) {
    case 'change_in_capacity':
      target = current + adjustment;
      break;
    case 'exact_capacity':
      target = adjustment;
      break;
    case 'percent_change_in_capacity': {
      const delta = (current * adjustment) / 100;
      let rounded = Math.abs(delta) < 1 ? (delta < 0 ? Math.floor(delta) : Math.ceil(delta)) : Math.trunc(delta);
      const step = input.minAdjustmentStep ?? 0;
      // Heat gives a zero change the negative sign here (`step if adjustment > 0 else -step`).
      if (step > Math.abs(rounded)) rounded = rounded > 0 ? step : -step;
      target = current + rounded;
      break;
    }
  }
  return Math.min(Math.max(target, input.minSize), input.maxSize);
}

/** The cooldown an adjustment stamps: the policy's if set, else the group's; negatives count as 0 (Heat). */
export function effectiveCooldown(policyCooldown: number | null, groupCooldown: number): number {
  return Math.max(0, policyCooldown ?? groupCooldown);
}

/** Why a group's bounds are not valid (Heat: max ≥ min ≥ 0, desired within them), or null. */
export function boundsProblem(minSize: number, maxSize: number, desired: number | undefined): string | null {
  if (minSize < 0) return `min_size ${minSize} is negative`;
  if (maxSize < minSize) return `max_size ${maxSize} is smaller than min_size ${minSize}`;
  if (desired !== undefined && (desired < minSize || desired > maxSize))
    return `desired_capacity ${desired} is outside [min_size ${minSize}, max_size ${maxSize}]`;
  return null;
}
