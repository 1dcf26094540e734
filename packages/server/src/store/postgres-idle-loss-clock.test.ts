// The "PostgreSQL closed idle connections" line is rate-limited to one a window. Measured on the wall
// clock, a step back (NTP, often right after boot) silenced it for the size of the step: an outage
// an hour after a step back of an hour logged nothing. The step is made in-process: `Date` is offset;
// timers and performance.now() are not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { idleConnectionLossReporter } from './postgres.ts';
import { stepWallClock } from '../test-support-clock.ts';

test('idleConnectionLossReporter: a step of the wall clock back does not silence the next window', async () => {
  const logged: unknown[] = [];
  const report = idleConnectionLossReporter((error) => logged.push(error), 200);
  const lost = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
  report(lost);
  assert.equal(logged.length, 1);
  const restore = stepWallClock(-3_600_000);
  try {
    await sleep(300);
    report(lost);
  } finally {
    restore();
  }
  assert.equal(logged.length, 2, 'a window (200 ms) after the first line, the next loss is logged');
});
