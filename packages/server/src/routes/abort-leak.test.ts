// A long wait (long-poll, event stream) first reads the store, then starts waiting: a client that
// went away meanwhile (a network blip, an agent restarted) had already closed its reply, and the wait
// waited for a close that had come, to its full length, and left its entry in LongWaits for ever
// (so the app's close waited for it too). Real HTTP on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { abortOnClose, LongWaits } from './abort.ts';

/** 'aborted' once the signal is (at once if it is already), or 'waited' after `ms`. */
async function abortedWithin(signal: AbortSignal, ms: number): Promise<'aborted' | 'waited'> {
  if (signal.aborted) return 'aborted';
  return (await within(once(signal, 'abort'), ms)) === 'timed out' ? 'waited' : 'aborted';
}

/** Resolves with `value`, or with 'timed out' after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), ms)));
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

test('a client gone before its wait began ends that wait at once and leaves nothing in LongWaits', async () => {
  const app = Fastify();
  const longWaits = new LongWaits();
  app.decorate('longWaits', longWaits);
  /** Per request: told when the handler has begun, then how its wait ended. */
  let begun: () => void = () => undefined;
  const outcomes: Array<'aborted' | 'waited'> = [];
  app.get('/wait', async (request, reply) => {
    begun();
    // Stands for a store read that outlasts the client: the wait begins only once it has gone.
    await once(reply.raw, 'close');
    const abort = abortOnClose(request, reply);
    outcomes.push(await abortedWithin(abort, 3_000));
    return 'done';
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  try {
    const CLIENTS = 20;
    for (let i = 0; i < CLIENTS; i++) {
      const inHandler = new Promise<void>((resolve) => (begun = resolve));
      const req = httpRequest({ host: '127.0.0.1', port, path: '/wait', agent: false });
      req.on('error', () => undefined);
      req.end();
      await inHandler;
      req.destroy();
    }
    for (let i = 0; i < 100 && outcomes.length < CLIENTS; i++) await sleep(50);
    assert.deepEqual(
      outcomes,
      Array.from({ length: CLIENTS }, () => 'aborted'),
      'each wait ended when it began, not after its whole length',
    );
    assert.equal(await within(longWaits.endAll(), 2_000), undefined, 'no wait of a gone client is left for the close to wait on');
  } finally {
    await app.close();
  }
});

test('a wait whose client stays ends when the client goes, and leaves nothing in LongWaits', async () => {
  const app = Fastify();
  const longWaits = new LongWaits();
  app.decorate('longWaits', longWaits);
  let begun: () => void = () => undefined;
  const outcomes: Array<'aborted' | 'waited'> = [];
  app.get('/wait', async (request, reply) => {
    const abort = abortOnClose(request, reply);
    begun();
    outcomes.push(await abortedWithin(abort, 3_000));
    return 'done';
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  try {
    const inHandler = new Promise<void>((resolve) => (begun = resolve));
    const req = httpRequest({ host: '127.0.0.1', port, path: '/wait', agent: false });
    req.on('error', () => undefined);
    req.end();
    await inHandler;
    assert.deepEqual(outcomes, [], 'still waiting while the client is there');
    req.destroy();
    for (let i = 0; i < 100 && outcomes.length < 1; i++) await sleep(20);
    assert.deepEqual(outcomes, ['aborted']);
    assert.equal(await within(longWaits.endAll(), 2_000), undefined);
  } finally {
    await app.close();
  }
});
