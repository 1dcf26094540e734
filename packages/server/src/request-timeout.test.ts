// A whole request has a time limit, as Node's own servers do (fastify turns it off): a client that sends
// its headers and then trickles its body, or stops, must not hold a connection for ever.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { REQUEST_TIMEOUT_MS } from './app.ts';
import { testApp } from './test-support.ts';

/** Sends `head` and part of a body on a raw socket, then nothing; resolves with what came back, or 'nothing' after `ms`. */
function stalledRequest(port: number, head: string, ms: number): Promise<string> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect(port, '127.0.0.1', () => socket.write(head));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(answer === '' ? 'nothing' : answer);
    }, ms);
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer === '' ? 'nothing' : answer);
    });
    socket.on('error', () => undefined);
  });
}

test('a body that stops arriving is a coded 408 naming both limits once the request time passes, and the connection closes', async () => {
  const { app, done } = await testApp({ requestTimeoutMs: 1000 });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as { port: number };
    const head =
      'POST /v1/default/software_configs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n' +
      'Content-Length: 100\r\nX-Auth-Token: t\r\n\r\n{"name": "slow';
    const started = Date.now();
    const answer = await stalledRequest(port, head, 10_000);
    const elapsed = Date.now() - started;
    assert.match(answer, /^HTTP\/1.1 408 /, answer.slice(0, 200));
    const body = JSON.parse(answer.split('\r\n\r\n')[1] ?? '') as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'ERR_REQUEST_TIMEOUT');
    assert.match(body.error.message, /its headers within 1 s, all of it within 1 s/);
    assert.ok(elapsed >= 900 && elapsed < 8000, `answered after ${elapsed} ms`);
    assert.equal((await app.inject({ url: '/healthz' })).statusCode, 200, 'the server keeps serving');
  } finally {
    await done();
  }
});

test("by default a whole request has Node's own 300 s, not fastify's none", async () => {
  const { app, done } = await testApp();
  try {
    assert.equal(REQUEST_TIMEOUT_MS, 300_000);
    assert.equal(app.server.requestTimeout, 300_000);
    assert.equal(app.server.headersTimeout, 60_000);
  } finally {
    await done();
  }
});
