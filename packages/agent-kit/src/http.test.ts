import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import { HttpRequestError, MIN_BODY_BYTES_PER_SECOND, closeHttpConnections, httpRequest } from './http.ts';

interface TestServer {
  url: string;
  /** Requests seen, in order. */
  requests: { method: string; url: string; headers: IncomingMessage['headers']; body: string }[];
  /** TCP connections accepted. */
  connections(): number;
}

/** A real node:http server on 127.0.0.1, closed after the test. */
async function serve(
  t: { after(fn: () => Promise<void> | void): void },
  handler: (req: IncomingMessage, res: ServerResponse, index: number) => void,
): Promise<TestServer> {
  const requests: TestServer['requests'] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() });
      handler(req, res, requests.length - 1);
    });
  });
  server.on('connection', () => (connections += 1));
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, connections: () => connections };
}

/** A loopback port where nothing listens. */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

test.after(() => closeHttpConnections());

test('GET returns status, headers and body; text() and json() read it', async (t) => {
  const server = await serve(t, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.setHeader('etag', '"v1"');
    res.end('{"deployments":[{"id":"d1"}]}');
  });
  const response = await httpRequest({ url: `${server.url}/v1/metadata?wait=1`, headers: { 'X-Auth-Token': 'tok' } });
  assert.equal(response.status, 200);
  assert.equal(response.headers.etag, '"v1"');
  assert.ok(Buffer.isBuffer(response.body));
  assert.equal(response.text(), '{"deployments":[{"id":"d1"}]}');
  assert.deepEqual(response.json<{ deployments: { id: string }[] }>().deployments[0], { id: 'd1' });
  const [seen] = server.requests;
  assert.equal(seen!.method, 'GET');
  assert.equal(seen!.url, '/v1/metadata?wait=1');
  assert.equal(seen!.headers['x-auth-token'], 'tok');
  assert.equal(seen!.headers['user-agent'], 'hearth-agent');
});

test('POST sends the body with its length; any status, 4xx and 5xx too, is a response', async (t) => {
  const server = await serve(t, (_req, res) => {
    res.statusCode = 404;
    res.end('not here');
  });
  const response = await httpRequest({
    method: 'post',
    url: `${server.url}/signal`,
    body: '{"status":"SUCCESS"}',
    headers: { 'Content-Type': 'application/json' },
  });
  assert.equal(response.status, 404);
  assert.equal(response.text(), 'not here');
  assert.throws(
    () => response.json(),
    (error: unknown) =>
      error instanceof SyntaxError && /response 404 from http:\/\/127\.0\.0\.1:\d+\/signal is not JSON/.test(error.message),
  );
  const [seen] = server.requests;
  assert.equal(seen!.method, 'POST');
  assert.equal(seen!.body, '{"status":"SUCCESS"}');
  assert.equal(seen!.headers['content-length'], '20');
  assert.equal(seen!.headers['content-type'], 'application/json');
});

test('sequential requests reuse one keep-alive connection', async (t) => {
  const server = await serve(t, (_req, res) => res.end('ok'));
  for (let index = 0; index < 5; index += 1) {
    const response = await httpRequest({ url: `${server.url}/poll/${index}` });
    assert.equal(response.text(), 'ok');
  }
  const head = await httpRequest({ method: 'HEAD', url: `${server.url}/head` });
  assert.equal(head.body.length, 0);
  assert.equal(server.requests.length, 6);
  assert.equal(server.connections(), 1);
});

test('a server that does not answer in time: ERR_HTTP_TIMEOUT after about timeoutMs', async (t) => {
  const server = await serve(t, () => undefined);
  const started = Date.now();
  await assert.rejects(httpRequest({ url: `${server.url}/slow?token=abc`, timeoutMs: 200 }), (error: unknown) => {
    assert.ok(error instanceof HttpRequestError);
    assert.equal(error.code, 'ERR_HTTP_TIMEOUT');
    assert.equal(error.attempts, 1);
    assert.match(error.url, /\/slow\?token=\*\*\*$/);
    assert.ok(!error.message.includes('abc'));
    return true;
  });
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 190 && elapsed < 2000, `took ${elapsed} ms`);
});

test('a body that stops arriving also times out', async (t) => {
  const server = await serve(t, (_req, res) => {
    res.writeHead(200, { 'content-length': '100' });
    res.write('partial');
  });
  await assert.rejects(httpRequest({ url: server.url, timeoutMs: 200 }), { code: 'ERR_HTTP_TIMEOUT' });
});

/** Writes `chunks` chunks of `chunkBytes` bytes `everyMs` apart, then ends the body (or, with `stall`, stops sending and keeps the connection open). */
function trickle(res: ServerResponse, options: { chunks: number; chunkBytes: number; everyMs: number; stall?: boolean }): void {
  const declared = options.chunks * options.chunkBytes + (options.stall ? 1 : 0);
  res.writeHead(200, { 'content-length': String(declared) });
  let sent = 0;
  const timer = setInterval(() => {
    if (sent === options.chunks) {
      clearInterval(timer);
      if (!options.stall) res.end();
      return;
    }
    res.write(Buffer.alloc(options.chunkBytes, 'x'));
    sent += 1;
  }, options.everyMs);
  res.on('close', () => clearInterval(timer));
}

test('a body that keeps arriving is not cut off by timeoutMs, however long it takes in all', async (t) => {
  // 200 KiB over about 2.5 s (80 KiB/s), more than twice timeoutMs: a big document on a slow link. The server runs
  // in this process: a 1 s timeout against 100 ms chunks leaves 0.9 s for this process not to run on a loaded CI box.
  const server = await serve(t, (_req, res) => trickle(res, { chunks: 25, chunkBytes: 8 * 1024, everyMs: 100 }));
  const started = Date.now();
  const response = await httpRequest({ url: server.url, timeoutMs: 1000 });
  assert.ok(Date.now() - started >= 2000, `took ${Date.now() - started} ms`);
  assert.equal(response.body.length, 25 * 8 * 1024);
});

test('data that came while this process did not run is read before a deadline that passed meanwhile is enforced', async (t) => {
  // The server runs in a worker thread, so it keeps sending while this thread is blocked (as a descheduled process is).
  const flags = new Int32Array(new SharedArrayBuffer(8)); // [0]: go on sending; [1]: all sent
  const worker = new Worker(
    `const { workerData: flags, parentPort } = require('node:worker_threads');
    const server = require('node:http').createServer((req, res) => {
      res.writeHead(200, { 'content-length': '2048' });
      res.write(Buffer.alloc(1024, 'a'));
      parentPort.postMessage('first half sent');
      let polls = 0;
      const timer = setInterval(() => {
        if (Atomics.load(flags, 0) === 0 && ++polls < 2000) return;
        clearInterval(timer);
        res.end(Buffer.alloc(1024, 'b'), () => { Atomics.store(flags, 1, 1); Atomics.notify(flags, 1); });
      }, 5);
    });
    server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
    { eval: true, workerData: flags },
  );
  t.after(() => worker.terminate());
  const port = await new Promise<number>((resolve) => worker.once('message', resolve));
  const block = (ms: number): void => void Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  worker.once('message', () =>
    // From setImmediate, so that the event loop goes on with timers (the missed deadline) before it reads the socket.
    setTimeout(() =>
      setImmediate(() => {
        const blockedAt = Date.now();
        Atomics.store(flags, 0, 1);
        Atomics.wait(flags, 1, 0, 10_000);
        block(blockedAt + 600 - Date.now()); // well past the 300 ms deadline
      }),
    ),
  );
  const response = await httpRequest({ url: `http://127.0.0.1:${port}/`, timeoutMs: 300 });
  assert.equal(response.text(), 'a'.repeat(1024) + 'b'.repeat(1024));
});

test('a body that stalls half-way times out timeoutMs after its last byte, saying so', async (t) => {
  const server = await serve(t, (_req, res) => trickle(res, { chunks: 6, chunkBytes: 1024, everyMs: 100, stall: true }));
  const started = Date.now();
  await assert.rejects(httpRequest({ url: server.url, timeoutMs: 300 }), (error: unknown) => {
    assert.ok(error instanceof HttpRequestError);
    assert.equal(error.code, 'ERR_HTTP_TIMEOUT');
    assert.match(error.message, /the body stalled: no data for 300 ms after 6144 bytes/);
    return true;
  });
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 850 && elapsed < 2500, `took ${elapsed} ms`);
});

test('a body trickled below MIN_BODY_BYTES_PER_SECOND is cut off soon after timeoutMs, though bytes keep coming', async (t) => {
  // 16 bytes every 50 ms (320 bytes/s): never idle for 300 ms, but hopelessly slow.
  const server = await serve(t, (_req, res) => trickle(res, { chunks: 1000, chunkBytes: 16, everyMs: 50 }));
  const started = Date.now();
  await assert.rejects(httpRequest({ url: server.url, timeoutMs: 300 }), (error: unknown) => {
    assert.ok(error instanceof HttpRequestError);
    assert.equal(error.code, 'ERR_HTTP_TIMEOUT');
    assert.match(error.message, new RegExp(`the body came too slowly: \\d+ bytes in \\d+ ms, below ${MIN_BODY_BYTES_PER_SECOND} bytes/s`));
    return true;
  });
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 290 && elapsed < 2000, `took ${elapsed} ms`);
});

test('holdMs extends only the wait for the response head: a held answer is fine, its stalled body is not', async (t) => {
  const server = await serve(t, (req, res) => {
    if (req.url === '/held') return void setTimeout(() => res.end('changed'), 600);
    setTimeout(() => trickle(res, { chunks: 2, chunkBytes: 512, everyMs: 50, stall: true }), 400);
  });
  const held = await httpRequest({ url: `${server.url}/held`, timeoutMs: 300, holdMs: 1000 });
  assert.equal(held.text(), 'changed');
  const started = Date.now();
  await assert.rejects(httpRequest({ url: `${server.url}/stalls`, timeoutMs: 300, holdMs: 5000 }), (error: unknown) => {
    assert.ok(error instanceof HttpRequestError);
    assert.match(error.message, /the body stalled: no data for 300 ms after 1024 bytes/);
    return true;
  });
  const elapsed = Date.now() - started;
  assert.ok(elapsed >= 700 && elapsed < 3000, `took ${elapsed} ms: the stall counts from the last byte, not from timeoutMs + holdMs`);
});

test('GET is retried on 503 until it succeeds', async (t) => {
  const server = await serve(t, (_req, res, index) => {
    res.statusCode = index < 2 ? 503 : 200;
    res.end(index < 2 ? 'busy' : 'done');
  });
  const started = Date.now();
  const response = await httpRequest({ url: server.url, retries: 3, retryDelayMs: 20 });
  assert.equal(response.status, 200);
  assert.equal(response.text(), 'done');
  assert.equal(server.requests.length, 3);
  assert.ok(Date.now() - started >= 55, 'waited 20 ms then 40 ms');
});

test('when retries run out the last 502/503/504 is returned as a response', async (t) => {
  const server = await serve(t, (_req, res) => {
    res.statusCode = 504;
    res.end('gateway');
  });
  const response = await httpRequest({ url: server.url, retries: 2, retryDelayMs: 1 });
  assert.equal(response.status, 504);
  assert.equal(server.requests.length, 3);
});

test('500 and 4xx are not retried', async (t) => {
  const server = await serve(t, (_req, res) => {
    res.statusCode = 500;
    res.end();
  });
  assert.equal((await httpRequest({ url: server.url, retries: 3, retryDelayMs: 1 })).status, 500);
  assert.equal(server.requests.length, 1);
});

test('Retry-After longer than the backoff is honoured', async (t) => {
  const server = await serve(t, (_req, res, index) => {
    if (index === 0) res.writeHead(503, { 'retry-after': '1' });
    res.end();
  });
  const started = Date.now();
  assert.equal((await httpRequest({ url: server.url, retries: 1, retryDelayMs: 1 })).status, 200);
  assert.ok(Date.now() - started >= 950);
});

test('POST is never retried: not on 503, not on a network error', async (t) => {
  const busy = await serve(t, (_req, res) => {
    res.statusCode = 503;
    res.end();
  });
  assert.equal((await httpRequest({ method: 'POST', url: busy.url, body: 'x', retries: 3, retryDelayMs: 1 })).status, 503);
  assert.equal(busy.requests.length, 1);

  const dropping = await serve(t, (req) => req.socket.destroy());
  await assert.rejects(
    httpRequest({ method: 'POST', url: dropping.url, body: 'signal', retries: 3, retryDelayMs: 1 }),
    (error: unknown) => {
      assert.ok(error instanceof HttpRequestError);
      assert.equal(error.code, 'ERR_HTTP_NETWORK');
      assert.equal(error.attempts, 1);
      return true;
    },
  );
  assert.equal(dropping.requests.length, 1);
});

test('PUT is retried after the server drops the connection', async (t) => {
  const server = await serve(t, (req, res, index) => {
    if (index === 0) req.socket.destroy();
    else res.end('stored');
  });
  const response = await httpRequest({ method: 'PUT', url: server.url, body: 'data', retries: 1, retryDelayMs: 1 });
  assert.equal(response.text(), 'stored');
  assert.equal(server.requests.length, 2);
});

test('connection refused: ERR_HTTP_NETWORK with ECONNREFUSED, after every retry, secrets hidden', async () => {
  const port = await closedPort();
  await assert.rejects(
    httpRequest({ url: `http://127.0.0.1:${port}/v1/signal/arn?Signature=s3cr3t&SignatureMethod=HmacSHA256`, retries: 2, retryDelayMs: 5 }),
    (error: unknown) => {
      assert.ok(error instanceof HttpRequestError);
      assert.equal(error.code, 'ERR_HTTP_NETWORK');
      assert.equal(error.systemCode, 'ECONNREFUSED');
      assert.equal(error.attempts, 3);
      assert.equal(error.method, 'GET');
      assert.equal(error.url, `http://127.0.0.1:${port}/v1/signal/arn?Signature=***&SignatureMethod=HmacSHA256`);
      assert.match(
        error.message,
        /^GET http:\/\/127\.0\.0\.1:\d+\/v1\/signal\/arn\?Signature=\*\*\*&SignatureMethod=HmacSHA256 failed: .*ECONNREFUSED.* \(after 3 attempts\)$/,
      );
      return true;
    },
  );
});

test('an abort signal ends the request and the wait between retries', async (t) => {
  const server = await serve(t, () => undefined);
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 100);
  const started = Date.now();
  await assert.rejects(httpRequest({ url: server.url, signal: controller.signal, timeoutMs: 5000 }), { code: 'ERR_HTTP_ABORTED' });
  assert.ok(Date.now() - started < 2000);

  const port = await closedPort();
  const waiting = new AbortController();
  setTimeout(() => waiting.abort(), 100);
  await assert.rejects(httpRequest({ url: `http://127.0.0.1:${port}/`, retries: 5, retryDelayMs: 10_000, signal: waiting.signal }), {
    code: 'ERR_HTTP_ABORTED',
  });
  await assert.rejects(httpRequest({ url: server.url, signal: AbortSignal.abort() }), { code: 'ERR_HTTP_ABORTED' });
});

test('bad URLs and oversized bodies are refused with their own codes', async (t) => {
  await assert.rejects(httpRequest({ url: 'not a url' }), { code: 'ERR_HTTP_INVALID_URL' });
  await assert.rejects(httpRequest({ url: 'ftp://127.0.0.1/x' }), { code: 'ERR_HTTP_INVALID_URL', message: /unsupported protocol ftp:/ });
  const server = await serve(t, (_req, res) => res.end('x'.repeat(2048)));
  await assert.rejects(httpRequest({ url: server.url, maxBodyBytes: 1024, retries: 2 }), { code: 'ERR_HTTP_BODY_TOO_LARGE', attempts: 1 });
});

test('a GET on a pooled connection the server drops is re-sent once on a new connection; a POST is not', async (t) => {
  const server = await serve(t, (req, res, index) => {
    if (index === 1 || index === 4) req.socket.destroy();
    else res.end(`answer ${index}`);
  });
  assert.equal((await httpRequest({ url: `${server.url}/first` })).text(), 'answer 0');
  assert.equal((await httpRequest({ url: `${server.url}/second` })).text(), 'answer 2');
  assert.equal(server.requests.length, 3);
  assert.equal(server.connections(), 2);
  assert.equal((await httpRequest({ method: 'POST', url: `${server.url}/third`, body: 'a' })).text(), 'answer 3');
  await assert.rejects(httpRequest({ method: 'POST', url: `${server.url}/fourth`, body: 'b' }), {
    code: 'ERR_HTTP_NETWORK',
    systemCode: 'ECONNRESET',
  });
  assert.equal(server.requests.length, 5);
});

test('a timeout longer than setTimeout can hold (30 days) waits for the reply instead of timing out after 1 ms', async (t) => {
  const server = await serve(t, (_req, res) => setTimeout(() => res.end('late but fine'), 150));
  const response = await httpRequest({ url: `${server.url}/slow`, timeoutMs: 30 * 24 * 3600 * 1000 });
  assert.equal(response.status, 200);
  assert.equal(response.text(), 'late but fine');
});
