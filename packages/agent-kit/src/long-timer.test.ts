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
