import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { PassThrough } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { ADMIN, registerServer, testApp } from './test-support.ts';

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

test('requests that arrive while hearth-server stops get a coded 503 with Retry-After: 1 (the CFN API its own form), and the write in flight is answered', async () => {
  const { app, done } = await testApp();
  try {
    const agent = await registerServer(app);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const base = `http://127.0.0.1:${port}`;
    // A write whose body has not all arrived: stopping waits for it to be answered, and goes on listening meanwhile.
    const body = '{"name":"held","group":"script","config":"true"}';
    const held = connect(port, '127.0.0.1');
    let heldReply = '';
    held.setEncoding('utf8').on('data', (chunk: string) => (heldReply += chunk));
    await new Promise((resolve) => held.once('connect', resolve));
    held.write(
      `POST /v1/default/software_configs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: ${ADMIN['x-auth-token']}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = app.close();

    const native = async () => fetch(`${base}/v1/default/servers`, { headers: ADMIN });
    let reply = await native();
    for (let i = 0; i < 50 && reply.status !== 503; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      reply = await native();
    }
    const answers = {
      native: reply,
      guest: await fetch(`${base}/v1/guest/metadata`, { headers: agent.auth }),
      signal: await fetch(`${base}/v1/guest/deployments/00000000-0000-4000-8000-000000000000/signal`, {
        method: 'POST',
        headers: { ...agent.auth, 'content-type': 'application/json' },
        body: '{"deploy_status_code":0}',
      }),
      readyz: await fetch(`${base}/readyz`),
    };
    for (const [what, answer] of Object.entries(answers)) {
      assert.equal(answer.status, 503, what);
      assert.equal(answer.headers.get('retry-after'), '1', what);
      assert.equal(answer.headers.get('connection'), 'close', what);
      const coded = (await answer.json()) as { error: { code: string } };
      assert.equal(coded.error.code, 'ERR_SERVER_SHUTTING_DOWN', what);
    }
    const cfn = await fetch(`${base}/v1/?Action=DescribeStackResource&StackName=s&LogicalResourceId=r`);
    assert.equal(cfn.status, 503);
    assert.equal(cfn.headers.get('retry-after'), '1');
    assert.match(await cfn.text(), /<Code>ServiceUnavailable<\/Code>.*ERR_SERVER_SHUTTING_DOWN/s);

    held.write(body.slice(10));
    await closing;
    assert.match(heldReply, /^HTTP\/1\.1 200 [^]*"name":"held"/, 'the write that was in flight is answered');
    held.destroy();
  } finally {
    await done();
  }
});
