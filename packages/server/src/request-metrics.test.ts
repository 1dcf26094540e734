import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ADMIN, eventually, metricValue, registerServer, testApp } from './test-support.ts';
import { rawExchange } from './test-support-wire.ts';

const requests = (route: string, method: string, status: number) =>
  `hearth_http_requests_total{route="${route}",method="${method}",status="${status}"}`;

// Request metrics come from Node's `http.server.response.finish` diagnostics channel (one subscriber
// per process), not from a fastify onResponse hook. This is over real HTTP, where that channel is
// the only thing that counts: if a Node upgrade renamed or dropped it, these counts would stay 0.
test('requests over HTTP are counted and timed by route, method and status, each app its own', async () => {
  const first = await testApp();
  const second = await testApp();
  // Another HTTP server in the same process: its responses are published on the channel too.
  const other = createServer((_request, response) => response.end('other'));
  try {
    const base = await first.app.listen({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    const agent = await registerServer(first.app);

    assert.equal((await fetch(`${base}/healthz`)).status, 200);
    assert.equal((await fetch(`${base}/v1/guest/metadata`, { headers: { authorization: agent.auth.authorization } })).status, 200);
    assert.equal((await fetch(`${base}/v1/guest/metadata`)).status, 401);
    assert.equal((await fetch(`${base}/v1/default/servers`, { method: 'POST', headers: ADMIN, body: '{' })).status, 400);
    assert.equal((await fetch(`${base}/no/such/path`)).status, 404);
    assert.equal((await fetch(`http://127.0.0.1:${(other.address() as AddressInfo).port}/`)).status, 200);

    const counted: Array<[string, string, number]> = [
      ['/healthz', 'GET', 200],
      ['/v1/guest/metadata', 'GET', 200],
      ['/v1/guest/metadata', 'GET', 401],
      ['/v1/:project_id/servers', 'POST', 400],
      ['unmatched', 'GET', 404],
    ];
    await eventually(async () => (await metricValue(first.app, requests('unmatched', 'GET', 404))) === 1, 'the 404 is counted');
    for (const [route, method, status] of counted) {
      assert.equal(await metricValue(first.app, requests(route, method, status)), 1, `${method} ${route} ${status}`);
    }
    const timed = await metricValue(first.app, 'hearth_http_request_duration_seconds_count{route="/v1/guest/metadata"}');
    assert.equal(timed, 2, 'both metadata requests are timed');
    assert.ok((await metricValue(first.app, 'hearth_http_request_duration_seconds_sum{route="/v1/guest/metadata"}')) > 0);
    // The registration above went through inject: counted too, by the listener injected requests get.
    assert.equal(await metricValue(first.app, requests('/v1/:project_id/servers', 'POST', 201)), 1);
    // Nothing of the first app (nor of the plain server) is counted by the second.
    const secondText = (await second.app.inject({ url: '/metrics' })).body;
    assert.doesNotMatch(secondText, /hearth_http_requests_total\{route="(\/healthz|unmatched|\/v1\/guest\/metadata)"/);
  } finally {
    other.close();
    await first.done();
    await second.done();
  }
});

test('a response is counted once, and one the client abandoned before it finished is not counted', async () => {
  const { app, done } = await testApp();
  try {
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const agent = await registerServer(app);
    const document = await fetch(`${base}/v1/guest/metadata`, { headers: { authorization: agent.auth.authorization } });
    const etag = document.headers.get('etag')!;
    // A long-poll the client gives up on: the server never finishes a response to it.
    const listening = app.services.feed.listenerCount();
    const controller = new AbortController();
    const poll = fetch(`${base}/v1/guest/metadata?wait=30`, {
      headers: { authorization: agent.auth.authorization, 'if-none-match': etag },
      signal: controller.signal,
    });
    await eventually(async () => app.services.feed.listenerCount() > listening, 'the long-poll waits');
    controller.abort();
    await assert.rejects(poll);
    await eventually(async () => app.services.feed.listenerCount() === listening, 'the long-poll ends');
    for (let i = 0; i < 3; i++) {
      const reply = await fetch(`${base}/v1/guest/metadata`, {
        headers: { authorization: agent.auth.authorization, 'if-none-match': etag },
      });
      assert.equal(reply.status, 304);
    }
    await eventually(async () => (await metricValue(app, requests('/v1/guest/metadata', 'GET', 304))) === 3, 'three 304s');
    assert.equal(await metricValue(app, requests('/v1/guest/metadata', 'GET', 200)), 1);
    assert.equal(await metricValue(app, 'hearth_http_request_duration_seconds_count{route="/v1/guest/metadata"}'), 4);
  } finally {
    await done();
  }
});

// The router refuses some requests before any hook runs (a path with bad percent-encoding, a segment
// over 512 characters): they are answered by frameworkErrors, and counted there.
test('requests the router refuses are counted as unmatched, with their status', async () => {
  const { app, done } = await testApp();
  try {
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    assert.equal((await fetch(`${base}/v1/guest/%zz`)).status, 400);
    assert.equal((await fetch(`${base}/v1/default/servers/${'x'.repeat(600)}`, { method: 'DELETE', headers: ADMIN })).status, 400);
    await eventually(async () => (await metricValue(app, requests('unmatched', 'DELETE', 400))) === 1, 'the long segment is counted');
    assert.equal(await metricValue(app, requests('unmatched', 'GET', 400)), 1);
    assert.equal(await metricValue(app, 'hearth_http_request_duration_seconds_count{route="unmatched"}'), 2);
  } finally {
    await done();
  }
});

// Node's HTTP parser refuses some requests (headers over 16 KiB, a malformed request line, a bad chunked
// body): the app answers them on the socket (app-errors.ts), no response finishes, and they are counted there.
test("requests Node's HTTP parser refuses are counted with the status they were sent", async () => {
  const { app, done } = await testApp();
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const padding = `X-Padding: ${'p'.repeat(20 * 1024)}\r\n`;
    // Refused in its headers: never routed, counted as unmatched with its request line's method.
    assert.match(await rawExchange(port, `PUT /v1/guest/metadata HTTP/1.1\r\nHost: h\r\n${padding}\r\n`), /^HTTP\/1.1 431 /);
    // A method Node does not know is not a label: its bytes are the client's.
    assert.match(await rawExchange(port, `S3CRET-VALUE /v1/guest/metadata\r\n\r\n`), /^HTTP\/1.1 400 /);
    assert.match(await rawExchange(port, `SECRETVALUE /v1/guest/metadata HTTP/1.1\r\n\r\n`), /^HTTP\/1.1 400 /);
    // Refused in its body: routed already, so counted (and timed) under its route.
    const chunked = `POST /v1/default/software_configs HTTP/1.1\r\nHost: h\r\nX-Auth-Token: ${ADMIN['x-auth-token']}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`;
    assert.match(await rawExchange(port, chunked), /^HTTP\/1.1 400 /);

    await eventually(async () => (await metricValue(app, requests('unmatched', 'PUT', 431))) === 1, 'the 431 is counted');
    assert.equal(await metricValue(app, requests('unmatched', 'unknown', 400)), 2);
    assert.equal(await metricValue(app, requests('/v1/:project_id/software_configs', 'POST', 400)), 1);
    assert.equal(await metricValue(app, 'hearth_http_request_duration_seconds_count{route="/v1/:project_id/software_configs"}'), 1);
    assert.equal(await metricValue(app, 'hearth_http_request_duration_seconds_count{route="unmatched"}'), 0, 'not timed');
    assert.doesNotMatch((await app.inject({ url: '/metrics' })).body, /S3CRET|SECRETVALUE/, 'no unchecked bytes in a label');
  } finally {
    await done();
  }
});
