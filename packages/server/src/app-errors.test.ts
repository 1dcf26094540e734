import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { testApp } from './test-support.ts';

/** Log lines of an app, parsed, as they come. */
function logLines(): { stream: PassThrough; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
  });
  return { stream, lines };
}

/** Sends `head` and part of a body on a new connection to `port`, then closes it without waiting for an answer. */
function sendPartOfABody(port: number, head: string, part: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(head + part, () => setTimeout(() => socket.destroy(), 100));
    });
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
}

test('a client that closes its connection mid-body is logged as that, not as a database outage', async () => {
  const { stream, lines } = logLines();
  const { app, done } = await testApp({ logger: { level: 'info', stream } });
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const body = '{"auth":{"identity":{"methods":["password"],"password":{"user":{"id":"k","password":"half-sent';
    await sendPartOfABody(
      port,
      `POST /v3/auth/tokens HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length + 100}\r\n\r\n`,
      body,
    );
    const isCoded = (line: Record<string, unknown>) => typeof line.code === 'string' && line.reqId !== undefined;
    for (let i = 0; i < 50 && !lines.some(isCoded); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    const logged = lines.filter(isCoded);
    assert.equal(logged.length, 1, JSON.stringify(lines));
    assert.equal(logged[0]!.code, 'ERR_REQUEST_INVALID', JSON.stringify(logged[0]));
    assert.equal(logged[0]!.level, 30, 'info, as every request refused for what its client did');
    assert.match(String(logged[0]!.msg), /closed the connection before sending the whole body/);
    assert.ok(!lines.some((line) => line.code === 'ERR_STORE_UNAVAILABLE'), JSON.stringify(lines));

    // A body over the limit, sent whole, is still a 413.
    const big = await fetch(`http://127.0.0.1:${port}/v3/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ pad: 'x'.repeat(70_000) }),
    });
    assert.equal(big.status, 413);
  } finally {
    await done();
  }
});
