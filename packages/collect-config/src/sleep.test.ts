import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sleep } from './sleep.ts';

test('sleep waits its time, and ends at once when the signal aborts', async () => {
  const started = Date.now();
  await sleep(50);
  assert.ok(Date.now() - started >= 45);
  const stop = new AbortController();
  const pending = sleep(60_000, stop.signal);
  stop.abort();
  await pending;
  await sleep(10, stop.signal);
});

test('a pause longer than setTimeout can hold (a 35-day polling interval) does not end after 1 ms', async () => {
  const stop = new AbortController();
  const long = sleep(3_000_000 * 1000, stop.signal).then(() => 'slept');
  const winner = await Promise.race([long, new Promise((resolve) => setTimeout(() => resolve('still sleeping'), 100))]);
  stop.abort();
  assert.equal(winner, 'still sleeping');
  assert.equal(await long, 'slept', 'the abort still ends it');
});
