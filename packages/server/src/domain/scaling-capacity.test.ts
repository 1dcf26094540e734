import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boundsProblem, effectiveCooldown, newCapacity, type CapacityInput } from './scaling-capacity.ts';

const base: CapacityInput = {
  current: 10,
  adjustmentType: 'percent_change_in_capacity',
  adjustment: 0,
  minAdjustmentStep: null,
  minSize: 0,
  maxSize: 100,
};
const calc = (over: Partial<CapacityInput>) => newCapacity({ ...base, ...over });

test("Heat's worked examples (§6.3)", () => {
  // 10 +15% → 1.5 → truncated to +1 → 11
  assert.equal(calc({ current: 10, adjustment: 15 }), 11);
  // 3 +10% → 0.3 → rounded away from zero to +1 → 4
  assert.equal(calc({ current: 3, adjustment: 10 }), 4);
  // 10 −15% → −1.5 → −1 → 9
  assert.equal(calc({ current: 10, adjustment: -15 }), 9);
  // 10 +15% with min step 2 → 12
  assert.equal(calc({ current: 10, adjustment: 15, minAdjustmentStep: 2 }), 12);
  // 2 −100% → −2 → 0, then clamped up to min_size
  assert.equal(calc({ current: 2, adjustment: -100, minSize: 1 }), 1);
  assert.equal(calc({ current: 2, adjustment: -100 }), 0);
});

test('percent: small negative deltas round away from zero, min step keeps the sign', () => {
  assert.equal(calc({ current: 3, adjustment: -10 }), 2); // −0.3 → −1
  assert.equal(calc({ current: 10, adjustment: -15, minAdjustmentStep: 3 }), 7);
  assert.equal(calc({ current: 10, adjustment: 0 }), 10); // no change at all
  assert.equal(calc({ current: 0, adjustment: 50 }), 0); // 0 × anything stays 0
  // A zero change raised to the min step goes down, as Heat's sign test (`> 0`) makes it.
  assert.equal(calc({ current: 4, adjustment: 0, minAdjustmentStep: 2 }), 2);
});

test('change and exact, clamped to the bounds', () => {
  assert.equal(calc({ adjustmentType: 'change_in_capacity', current: 1, adjustment: 1 }), 2);
  assert.equal(calc({ adjustmentType: 'change_in_capacity', current: 2, adjustment: 5, maxSize: 3 }), 3);
  assert.equal(calc({ adjustmentType: 'change_in_capacity', current: 2, adjustment: -5, minSize: 1 }), 1);
  assert.equal(calc({ adjustmentType: 'exact_capacity', current: 2, adjustment: 7 }), 7);
  assert.equal(calc({ adjustmentType: 'exact_capacity', current: 2, adjustment: 700 }), 100);
  // min_adjustment_step means nothing outside the percent type
  assert.equal(calc({ adjustmentType: 'change_in_capacity', current: 2, adjustment: 1, minAdjustmentStep: 5 }), 3);
});

test('cooldown: the policy wins when set, negatives are 0', () => {
  assert.equal(effectiveCooldown(null, 60), 60);
  assert.equal(effectiveCooldown(5, 60), 5);
  assert.equal(effectiveCooldown(0, 60), 0);
  assert.equal(effectiveCooldown(-3, 60), 0);
});

test('bounds: max ≥ min ≥ 0 and desired within them', () => {
  assert.equal(boundsProblem(1, 3, 2), null);
  assert.equal(boundsProblem(0, 0, undefined), null);
  assert.match(boundsProblem(-1, 3, undefined) ?? '', /negative/);
  assert.match(boundsProblem(4, 3, undefined) ?? '', /max_size 3 is smaller than min_size 4/);
  assert.match(boundsProblem(1, 3, 5) ?? '', /desired_capacity 5 is outside/);
  assert.match(boundsProblem(1, 3, 0) ?? '', /outside/);
});
