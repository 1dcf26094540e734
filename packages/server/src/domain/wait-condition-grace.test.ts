import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WaitConditionGrace } from './wait-condition-grace.ts';

const START = Date.parse('2030-01-01T00:10:00Z');
const at = (offsetS: number) => new Date(START + offsetS * 1000).toISOString();

test('the grace holds deadlines of conditions made before the start that fall before its end, and only while it lasts', () => {
  const grace = new WaitConditionGrace(360_000, START);
  const before = { created_at: at(-600), deadline_at: at(-60) };
  assert.equal(grace.timedOut(before, at(1)), false, 'passed while not running: held');
  assert.equal(grace.timedOut({ created_at: at(-600), deadline_at: at(30) }, at(31)), false, 'passes during the grace: held');
  assert.equal(grace.timedOut(before, at(360)), true, 'the grace is over');
  assert.equal(grace.timedOut({ created_at: at(-600), deadline_at: at(360) }, at(360)), true, 'due at its end: not held');
  assert.equal(grace.timedOut({ created_at: at(1), deadline_at: at(2) }, at(2)), true, 'made after the start: not held');
  assert.equal(grace.timedOut({ created_at: at(-600), deadline_at: at(900) }, at(1)), false, 'not yet due');
  assert.equal(new WaitConditionGrace(0, START).timedOut(before, at(0)), true, 'no grace holds nothing');
});

test('the timeout reason says what the grace held it for', () => {
  const grace = new WaitConditionGrace(360_000, START);
  const waited = 'it waited 360 s after starting for a late signal';
  assert.equal(
    grace.note({ created_at: at(-600), deadline_at: at(-60) }),
    ` (hearth-server was not running when the deadline passed; ${waited})`,
  );
  assert.equal(grace.note({ created_at: at(-600), deadline_at: at(30) }), ` (hearth-server restarted while it ran; ${waited})`);
  assert.equal(grace.note({ created_at: at(-600), deadline_at: at(400) }), '', 'due after the grace');
  assert.equal(grace.note({ created_at: at(1), deadline_at: at(2) }), '', 'made after the start');
  assert.equal(new WaitConditionGrace(0, START).note({ created_at: at(-600), deadline_at: at(-60) }), '');
});
