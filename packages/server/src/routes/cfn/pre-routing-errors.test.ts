import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ADMIN, testApp } from '../../test-support.ts';
import { rawExchange } from '../../test-support-wire.ts';

/** Sends raw bytes to a listening app; resolves with all it answered before closing (at most 5 s). */

/** Status, headers (lower-cased names) and body of a raw HTTP/1.1 answer. */
function parseAnswer(answer: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', ...rest] = answer.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

/** Asserts a CFN XML error body (boto reads Code and Message from it) that carries hearth's code. */
function assertCfnXml(what: string, contentType: string | null | undefined, body: string, awsCode: string, hearthCode: string): void {
  assert.match(contentType ?? '', /^application\/xml/, `${what}: ${body.slice(0, 200)}`);
  assert.match(
    body,
    new RegExp(
      `^<ErrorResponse><Error><Type>Sender</Type><Code>${awsCode}</Code><Message>[^<]+ \\(${hearthCode}\\)</Message></Error></ErrorResponse>$`,
    ),
    what,
  );
}

async function listening(app: FastifyInstance): Promise<{ port: number; base: string }> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  return { port, base: `http://127.0.0.1:${port}` };
}

test('URLs the router refuses and unknown methods under the CFN paths get CFN error bodies; other paths keep the JSON one', async () => {
  const { app, done } = await testApp();
  try {
    const { base } = await listening(app);
    const cases: Array<[string, string, number, string, string]> = [
      ['PUT', '/v1/waitcondition/arn%zz', 400, 'InvalidParameterValue', 'ERR_REQUEST_INVALID'],
      ['POST', '/v1/signal/arn%E0%A4%A', 400, 'InvalidParameterValue', 'ERR_REQUEST_INVALID'],
      ['GET', '/v1/waitcondition/arn', 405, 'InvalidAction', 'ERR_METHOD_NOT_ALLOWED'],
      ['PUT', '/v1/?Action=DescribeStackResource', 405, 'InvalidAction', 'ERR_METHOD_NOT_ALLOWED'],
      ['POST', '/v1/signal', 404, 'InvalidAction', 'ERR_ROUTE_NOT_FOUND'],
    ];
    for (const [method, url, status, awsCode, hearthCode] of cases) {
      const reply = await fetch(base + url, { method, body: method === 'GET' ? undefined : '{}' });
      const body = await reply.text();
      assert.equal(reply.status, status, `${method} ${url}: ${body}`);
      assertCfnXml(`${method} ${url}`, reply.headers.get('content-type'), body, awsCode, hearthCode);
    }
    const allow = await fetch(`${base}/v1/waitcondition/arn`);
    assert.equal(allow.headers.get('allow'), 'PUT', 'a 405 still names the allowed methods');

    // ContentType=JSON (boto's cfn-get-metadata asks for it) gets the same error as JSON, as the routes answer it.
    const json = await fetch(`${base}/v1/signal/arn%zz?ContentType=JSON`, { method: 'POST' });
    assert.equal(json.status, 400);
    assert.deepEqual(await json.json(), {
      ErrorResponse: {
        Error: {
          Type: 'Sender',
          Code: 'InvalidParameterValue',
          Message: 'The request is not valid: the path has invalid percent-encoding. (ERR_REQUEST_INVALID)',
        },
      },
    });

    // Not the CFN API's paths: hearth's own JSON body, as before.
    for (const url of ['/v1/default/%zz', '/v1/guest/%zz']) {
      const reply = await fetch(base + url, { headers: ADMIN });
      assert.equal(reply.status, 400, url);
      assert.equal(((await reply.json()) as { error: { code: string } }).error.code, 'ERR_REQUEST_INVALID', url);
    }
  } finally {
    await done();
  }
});

test("requests Node's HTTP parser refuses on the CFN paths get CFN error bodies, in the format their query asks for", async () => {
  const { app, done } = await testApp();
  try {
    const { port } = await listening(app);
    const cases: Array<[string, string, number, string, string]> = [
      [
        'a header name with a space',
        'GET /v1/?Action=DescribeStackResource HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n',
        400,
        'InvalidParameterValue',
        'ERR_REQUEST_INVALID',
      ],
      [
        'bad chunked encoding',
        'PUT /v1/waitcondition/arn HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n0\r\n\r\n',
        400,
        'InvalidParameterValue',
        'ERR_REQUEST_INVALID',
      ],
      [
        'two Content-Lengths',
        'POST /v1/signal/arn HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
        400,
        'InvalidParameterValue',
        'ERR_REQUEST_INVALID',
      ],
      [
        'headers over 16 KiB',
        `GET /v1/?Action=DescribeStackResource HTTP/1.1\r\nHost: h\r\nX-Padding: ${'p'.repeat(20 * 1024)}\r\n\r\n`,
        431,
        'InvalidParameterValue',
        'ERR_REQUEST_HEADERS_TOO_LARGE',
      ],
    ];
    for (const [name, bytes, status, awsCode, hearthCode] of cases) {
      const answer = parseAnswer(await rawExchange(port, bytes));
      assert.equal(answer.status, status, `${name}: ${answer.body}`);
      assertCfnXml(name, answer.headers['content-type'], answer.body, awsCode, hearthCode);
      assert.equal(Number(answer.headers['content-length']), Buffer.byteLength(answer.body), name);
    }
    const json = parseAnswer(
      await rawExchange(
        port,
        `GET /v1/?Action=DescribeStackResource&ContentType=JSON HTTP/1.1\r\nHost: h\r\nX-P: ${'p'.repeat(20 * 1024)}\r\n\r\n`,
      ),
    );
    assert.equal(json.status, 431);
    assert.equal(
      (JSON.parse(json.body) as { ErrorResponse: { Error: { Message: string } } }).ErrorResponse.Error.Message,
      'The request headers are larger than the 16384 bytes hearth-server reads: send fewer or shorter headers. (ERR_REQUEST_HEADERS_TOO_LARGE)',
    );
    // Elsewhere, and where the request line cannot be read, hearth's JSON body as before.
    for (const bytes of ['GET /v1/guest/metadata HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n', 'S3CRET /v1/ HTTP/1.1\r\n\r\n']) {
      const answer = parseAnswer(await rawExchange(port, bytes));
      assert.equal(answer.status, 400);
      assert.equal((JSON.parse(answer.body) as { error: { code: string } }).error.code, 'ERR_REQUEST_INVALID');
    }
  } finally {
    await done();
  }
});

test('a CFN request too slow to arrive is a CFN 408; a body over the limit is hearth’s 413, in CFN’s shape', async () => {
  const { app, done } = await testApp();
  try {
    const { port, base } = await listening(app);
    // Node's request timeout fires on a 30 s check (not configurable after start): emit what it emits, on a
    // real connection whose headers have arrived and whose body has not.
    const serverSocket = new Promise<Socket>((resolve) => app.server.once('connection', resolve));
    const client = connect(port, '127.0.0.1');
    let answer = '';
    client.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const closed = new Promise((resolve) => client.on('close', resolve));
    client.write('PUT /v1/waitcondition/arn HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n{"Status"');
    const socket = await serverSocket;
    for (let i = 0; i < 100 && !(socket as Socket & { _httpMessage?: unknown })._httpMessage; i++)
      await new Promise((resolve) => setTimeout(resolve, 10));
    app.server.emit('clientError', Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
    await closed;
    const timedOut = parseAnswer(answer);
    assert.equal(timedOut.status, 408, answer);
    assertCfnXml('timeout', timedOut.headers['content-type'], timedOut.body, 'InvalidParameterValue', 'ERR_REQUEST_TIMEOUT');

    const big = await fetch(`${base}/v1/signal/arn`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: 'x'.repeat(1024 * 1024) }),
    });
    const body = await big.text();
    assert.equal(big.status, 413);
    assertCfnXml('too large', big.headers.get('content-type'), body, 'RequestLimitExceeded', 'ERR_REQUEST_BODY_TOO_LARGE');
    assert.match(body, /larger than the 1048576 bytes this endpoint accepts/, 'the message hearth gives it everywhere');
  } finally {
    await done();
  }
});

test('while hearth-server stops, a request to a CFN path no route serves gets a CFN 503 with Retry-After', async () => {
  const { app, done } = await testApp();
  try {
    const { port, base } = await listening(app);
    // A write in flight keeps the server listening while it stops.
    const body = '{"name":"held","group":"script","config":"true"}';
    const held = connect(port, '127.0.0.1');
    held.on('error', () => undefined);
    await new Promise((resolve) => held.once('connect', resolve));
    held.write(
      `POST /v1/default/software_configs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: ${ADMIN['x-auth-token']}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = app.close();
    let reply = await fetch(`${base}/v1/`, { method: 'PUT', body: '{}' });
    for (let i = 0; i < 50 && reply.status !== 503; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      reply = await fetch(`${base}/v1/`, { method: 'PUT', body: '{}' });
    }
    assert.equal(reply.status, 503);
    assert.equal(reply.headers.get('retry-after'), '1');
    assert.match(
      await reply.text(),
      /^<ErrorResponse><Error><Type>Server<\/Type><Code>ServiceUnavailable<\/Code><Message>[^<]+\(ERR_SERVER_SHUTTING_DOWN\)<\/Message>/,
    );
    held.end(body.slice(10));
    await closing;
    held.destroy();
  } finally {
    await done();
  }
});
