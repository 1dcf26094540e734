import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INTERRUPTED, untilInterrupted } from './interrupt.ts';

/** An onInterrupt whose Ctrl-C the test presses, counting the listeners still registered. */
function fakeInterrupt(): { onInterrupt: (listener: () => void) => () => void; press(): void; listening(): number } {
  const listeners = new Set<() => void>();
  return {
    onInterrupt: (listener) => {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
    press: () => {
      for (const listener of listeners) listener();
    },
    listening: () => listeners.size,
  };
}

test('untilInterrupted gives the work its result, and stops listening for Ctrl-C', async () => {
  const ctrlC = fakeInterrupt();
  assert.equal(await untilInterrupted(ctrlC, Promise.resolve(42)), 42);
  assert.equal(ctrlC.listening(), 0);
  await assert.rejects(untilInterrupted(ctrlC, Promise.reject(new Error('boom'))), /boom/);
  assert.equal(ctrlC.listening(), 0);
});

test('untilInterrupted resolves to INTERRUPTED on Ctrl-C; a late failure of the work is dropped', async () => {
  const ctrlC = fakeInterrupt();
  let fail: (error: Error) => void = () => undefined;
  const work = new Promise<number>((_resolve, reject) => (fail = reject));
  const waiting = untilInterrupted(ctrlC, work);
  assert.equal(ctrlC.listening(), 1);
  ctrlC.press();
  assert.equal(await waiting, INTERRUPTED);
  assert.equal(ctrlC.listening(), 0);
  fail(new Error('late'));
  await new Promise((resolve) => setImmediate(resolve));
});

test('without onInterrupt the work runs as it is', async () => {
  assert.equal(await untilInterrupted({}, Promise.resolve('x')), 'x');
});
