// One VM's credential may hold only a few long-polls waiting at once: each holds a connection, and a
// VM holding hundreds would leave the other agents' connections refused. Real HTTP on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { registerServer, testApp } from '../../test-support.ts';
import { MAX_WAITING_PER_CREDENTIAL } from './index.ts';

interface Answer {
  status: number;
  retryAfter: string | undefined;
  connection: string | undefined;
  code: string | undefined;
}

/** A metadata GET on a connection of its own; `abort` ends it. */
function poll(port: number, headers: Record<string, string>, abort: AbortSignal): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: '/v1/guest/metadata?wait=30', headers, agent: false, signal: abort },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          const code = body ? (JSON.parse(body) as { error?: { code: string } }).error?.code : undefined;
          resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'], connection: res.headers.connection, code });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** 'held' when the long-poll is still waiting after `ms` (then ended), else its answer. */
async function heldFor(port: number, headers: Record<string, string>, ms: number): Promise<Answer | 'held'> {
  try {
    return await poll(port, headers, AbortSignal.timeout(ms));
  } catch (error) {
    if ((error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError') return 'held';
    throw error;
  }
}

test('long-polls: past the cap per credential a 429 ERR_RATE_LIMITED with Retry-After; another VM still waits, and a freed slot is taken again', async () => {
  const { app, done } = await testApp({ background: false });
  const stop = new AbortController();
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const port = (app.server.address() as AddressInfo).port;
    const [a, b] = [await registerServer(app, 'a'), await registerServer(app, 'b')];
    const etagOf = async (auth: Record<string, string>) =>
      (await app.inject({ url: '/v1/guest/metadata', headers: auth })).headers.etag as string;
    const headersA = { ...a.auth, 'if-none-match': await etagOf(a.auth) };
    const headersB = { ...b.auth, 'if-none-match': await etagOf(b.auth) };
    const held = Array.from({ length: MAX_WAITING_PER_CREDENTIAL }, () => poll(port, headersA, stop.signal).catch(() => undefined));
    // The cap's polls are waiting once a further one is refused (each refusal comes at once, its
    // connection closed: left open on keep-alive it would hold a connection all the same).
    const over: Answer[] = [];
    for (let i = 0; i < 50 && over.length < 3; i++) {
      const answer = await poll(port, headersA, AbortSignal.timeout(2_000)).catch(() => undefined);
      if (answer?.status === 429) over.push(answer);
    }
    assert.equal(over.length, 3);
    for (const answer of over) assert.deepEqual(answer, { status: 429, retryAfter: '5', connection: 'close', code: 'ERR_RATE_LIMITED' });
    // B's agent still gets its long-poll: it is held, not refused.
    assert.equal(await heldFor(port, headersB, 500), 'held');
    // A's polls ended (the agent went away): their slots are free again, once the server saw them close.
    stop.abort();
    await Promise.all(held);
    let retried: Answer | 'held' = 'held';
    for (let i = 0; i < 20; i++) {
      retried = await heldFor(port, headersA, 300);
      if (retried === 'held') break;
      await sleep(100);
    }
    assert.equal(retried, 'held');
  } finally {
    stop.abort();
    await done();
  }
});
