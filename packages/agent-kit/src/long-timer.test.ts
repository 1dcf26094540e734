import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setLongTimeout } from './long-timer.ts';

test('setLongTimeout fires after its delay, and a delay past setTimeout’s limit does not fire after 1 ms', async () => {
  const fired: string[] = [];
  const started = Date.now();
  await new Promise<void>((resolve) => setLongTimeout(resolve, 30));
  assert.ok(Date.now() - started >= 25);
  const cancel = setLongTimeout(() => fired.push('30 days'), 30 * 24 * 3600 * 1000);
  const cancelled = setLongTimeout(() => fired.push('cancelled'), 5);
  cancelled();
  await new Promise((resolve) => setTimeout(resolve, 100));
  cancel();
  assert.deepEqual(fired, []);
});

test('setLongTimeout keeps to its delay when the wall clock jumps back (NTP syncing a VM that booted ahead)', async (t) => {
  const realNow = Date.now;
  t.after(() => (Date.now = realNow));
  const started = performance.now();
  let cancel = (): void => undefined;
  const fired = new Promise<number>((resolve) => (cancel = setLongTimeout(() => resolve(performance.now() - started), 50)));
  t.after(() => cancel());
  const twoYearsMs = 2 * 365 * 24 * 3600 * 1000;
  Date.now = () => realNow() - twoYearsMs;
  const late = new Promise<string>((resolve) => setTimeout(() => resolve('still waiting after 1 s'), 1000).unref());
  const tookMs = await Promise.race([fired, late]);
  assert.equal(typeof tookMs, 'number', String(tookMs));
  assert.ok((tookMs as number) >= 45 && (tookMs as number) < 1000, `fired after ${String(tookMs)} ms`);
});
