import { after, before, test } from 'node:test';
import { createServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import assert from 'node:assert/strict';
import { createClient } from './client.ts';
import { json, useStubServer } from './stub-server.ts';
import { HearthApiError, HearthConnectionError } from './errors.ts';

const stub = useStubServer();

/** A listener on 127.0.0.1 that accepts connections and never answers (a hung server). */
const silent = { url: '', sockets: new Set<Socket>() };
const silentServer = createTcpServer((socket) => {
  silent.sockets.add(socket);
  socket.on('error', () => undefined);
  socket.on('close', () => silent.sockets.delete(socket));
});
before(async () => {
  await new Promise<void>((resolve) => silentServer.listen(0, '127.0.0.1', resolve));
  silent.url = `http://127.0.0.1:${(silentServer.address() as AddressInfo).port}`;
});
after(async () => {
  for (const socket of silent.sockets) socket.destroy();
  await new Promise<void>((resolve) => silentServer.close(() => resolve()));
});

test('operator calls send X-Auth-Token to /v1/{project}/... and unwrap the envelope', async () => {
  stub.handler = (_req, res) => json(res, 200, { servers: [{ id: 's1' }] });
  const client = createClient({ url: stub.url, token: 'admin', project: 'p1' });
  assert.deepEqual(await client.listServers(), [{ id: 's1' }]);
  const request = stub.lastSeen();
  assert.equal(request.url, '/v1/p1/servers');
  assert.equal(request.headers['x-auth-token'], 'admin');
  assert.equal(request.headers.authorization, undefined);
});

test('waitDeployment asks the server to hold the call with ?wait=', async () => {
  stub.handler = (_req, res) => json(res, 200, { software_deployment: { id: 'd1', status: 'COMPLETE' } });
  const client = createClient({ url: stub.url, token: 'admin' });
  const deployment = await client.waitDeployment('d1', 5);
  assert.equal(deployment.status, 'COMPLETE');
  assert.equal(stub.lastSeen().url, '/v1/default/software_deployments/d1?wait=5');
  await assert.rejects(client.waitDeployment('d1', 61), RangeError);
});

test('a coded error reply throws HearthApiError with status, code and details', async () => {
  stub.handler = (_req, res) =>
    json(res, 404, {
      code: 404,
      title: 'Not Found',
      explanation: 'The resource could not be found.',
      error: {
        code: 'ERR_DEPLOYMENT_NOT_FOUND',
        type: 'NotFound',
        message: 'Software deployment nope does not exist.',
        details: { id: 'nope' },
      },
    });
  const client = createClient({ url: stub.url, token: 'admin' });
  const error = await client.getDeployment('nope').catch((e: unknown) => e);
  assert.ok(error instanceof HearthApiError);
  assert.equal(error.status, 404);
  assert.equal(error.code, 'ERR_DEPLOYMENT_NOT_FOUND');
  assert.deepEqual(error.details, { id: 'nope' });
});

test('idempotent calls are retried after a 503', async () => {
  let calls = 0;
  stub.handler = (_req, res) => {
    calls++;
    if (calls === 1) json(res, 503, { error: { code: 'ERR_STORE_UNAVAILABLE', message: 'later' } }, { 'retry-after': '0' });
    else json(res, 200, { software_config: { id: 'c1' } });
  };
  const client = createClient({ url: stub.url, token: 'admin' });
  assert.deepEqual(await client.getConfig('c1'), { id: 'c1' });
  assert.equal(calls, 2);
});

test('guest calls send the credential as Bearer, with Idempotency-Key on signals', async () => {
  stub.handler = (_req, res) => json(res, 200, { deployment_id: 'd1', status: 'COMPLETE', status_reason: null, duplicate: false });
  const client = createClient({ url: stub.url, token: 'AK:secret' });
  const ack = await client.signal('d1', { deploy_status_code: 0 }, { idempotencyKey: 'k1' });
  assert.equal(ack.status, 'COMPLETE');
  const request = stub.lastSeen();
  assert.equal(request.method, 'POST');
  assert.equal(request.url, '/v1/guest/deployments/d1/signal');
  assert.equal(request.headers.authorization, 'Bearer AK:secret');
  assert.equal(request.headers['idempotency-key'], 'k1');
  assert.deepEqual(JSON.parse(request.body), { deploy_status_code: 0 });
});

test('getMetadata sends If-None-Match and reports 304 as not modified', async () => {
  stub.handler = (req, res) => {
    if (req.headers['if-none-match'] === '"v1"') {
      res.writeHead(304, { etag: '"v1"' });
      res.end();
    } else json(res, 200, { deployments: [], 'os-collect-config': {} }, { etag: '"v1"' });
  };
  const client = createClient({ url: stub.url, token: 'AK:secret' });
  const first = await client.getMetadata();
  assert.deepEqual(first, { modified: true, etag: '"v1"', document: { deployments: [], 'os-collect-config': {} } });
  const second = await client.getMetadata({ etag: '"v1"', wait: 2 });
  assert.deepEqual(second, { modified: false, etag: '"v1"' });
  assert.equal(stub.lastSeen().url, '/v1/guest/metadata?wait=2');
});

test('a refused connection throws ERR_CONNECTION at once, without retries', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const client = createClient({ url: `http://127.0.0.1:${port}`, token: 'admin' });
  const started = Date.now();
  const error = await client.listServers().catch((e: unknown) => e);
  assert.ok(error instanceof HearthConnectionError);
  assert.equal(error.code, 'ERR_CONNECTION');
  assert.match(error.message, /HEARTH_URL/);
  assert.ok(Date.now() - started < 900, 'no retry delay');
});

test('the event stream reconnects from the last event id after the connection drops', async () => {
  const event = (id: number): string => `id: ${id}\nevent: server.created\ndata: ${JSON.stringify({ id, type: 'server.created' })}\n\n`;
  stub.handler = (req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (!req.url.includes('after=')) res.end(`: keepalive\n\n${event(1)}${event(2)}`);
    else res.write(event(3));
  };
  const controller = new AbortController();
  const client = createClient({ url: stub.url, token: 'admin' });
  const ids: number[] = [];
  const reconnects: Array<string | undefined> = [];
  for await (const item of client.streamEvents({
    signal: controller.signal,
    reconnectDelayMs: 10,
    onReconnect: (info) => reconnects.push(info.after),
  })) {
    ids.push(item.id);
    if (ids.length === 3) controller.abort();
  }
  assert.deepEqual(ids, [1, 2, 3]);
  const resumed = stub.seen.filter((r) => r.url.includes('/events/stream')).at(-1);
  assert.equal(resumed?.url, '/v1/default/events/stream?after=2');
  assert.equal(resumed.headers['last-event-id'], '2');
  assert.equal(resumed.headers['x-auth-token'], 'admin');
  assert.deepEqual(reconnects, ['2']);
});

test('the event stream throws a 4xx reply instead of reconnecting', async () => {
  stub.handler = (_req, res) =>
    json(res, 400, { error: { code: 'ERR_EVENT_CURSOR_INVALID', message: 'The event cursor zz is not valid.' } });
  const client = createClient({ url: stub.url, token: 'admin' });
  const iterate = async (): Promise<void> => {
    for await (const item of client.streamEvents({ after: 'zz' })) assert.fail(`unexpected event ${item.id}`);
  };
  await assert.rejects(iterate(), (error: unknown) => error instanceof HearthApiError && error.code === 'ERR_EVENT_CURSOR_INVALID');
});

test('the event stream reconnects after the connection breaks before any event, reporting the failure', async () => {
  let connections = 0;
  stub.handler = (_req, res) => {
    connections++;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (connections === 1) {
      res.write(': hearth events\n\n');
      setTimeout(() => res.destroy(), 20);
    } else res.write(`id: 9\nevent: server.created\ndata: ${JSON.stringify({ id: 9 })}\n\n`);
  };
  const controller = new AbortController();
  const client = createClient({ url: stub.url, token: 'admin' });
  const failures: unknown[] = [];
  for await (const item of client.streamEvents({
    signal: controller.signal,
    reconnectDelayMs: 10,
    onReconnect: (info) => failures.push(info.error),
  })) {
    assert.equal(item.id, 9);
    controller.abort();
  }
  assert.equal(connections, 2);
  assert.equal(failures.length, 1);
  assert.ok(failures[0] instanceof HearthConnectionError, String(failures[0]));
});

test('a call given a signal ends when it aborts, retries included, rejecting with its reason', async () => {
  const timeoutMs = 2000;
  const client = createClient({ url: silent.url, token: 'admin', timeoutMs, retry: 2 });
  // A call that waited for its attempt to time out would take timeoutMs (more for a wait); each is
  // bounded on its own, so a slow machine's delays do not add up across the calls.
  const timed = async (call: () => Promise<unknown>) => {
    const started = Date.now();
    const outcome = await call().catch((e: unknown) => e);
    const ms = Date.now() - started;
    assert.ok(ms < timeoutMs, `${ms} ms: the call ended with its signal, not with its attempt's ${timeoutMs} ms timeout`);
    return outcome;
  };
  const signal = AbortSignal.timeout(300);
  const error = await timed(() => client.getDeployment('d1', { signal }));
  assert.equal(error, signal.reason);
  const poll = await timed(() => client.pollWaitCondition('web', 'ready', { wait: 5, signal: AbortSignal.timeout(200) }));
  assert.ok(poll instanceof DOMException && poll.name === 'TimeoutError', String(poll));
  const waited = await timed(() => client.waitDeployment('d1', 5, { signal: AbortSignal.timeout(200) }));
  assert.ok(waited instanceof DOMException && waited.name === 'TimeoutError', String(waited));
});

test('a call that times out says how long each attempt waited and how many attempts were made', async () => {
  const once = createClient({ url: silent.url, token: 'admin', timeoutMs: 200, retry: 0 });
  const single = await once.listServers().catch((e: unknown) => e);
  assert.ok(single instanceof HearthConnectionError);
  assert.equal(single.code, 'ERR_TIMEOUT');
  assert.match(single.message, /did not answer GET \S+\/v1\/default\/servers within 200 ms:/);
  const retried = createClient({ url: silent.url, token: 'admin', timeoutMs: 200, retry: 1 });
  const twice = await retried.listServers().catch((e: unknown) => e);
  assert.ok(twice instanceof HearthConnectionError);
  assert.match(twice.message, /within 200 ms on each of 2 attempts:/);
});

test('an API error records which credential the call carried', async () => {
  stub.handler = (_req, res) => json(res, 403, { error: { code: 'ERR_AUTH_FORBIDDEN', message: 'no' } });
  const client = createClient({ url: stub.url, token: 'admin' });
  const agentCall = await client.putMetrics({ samples: [{ metric_name: 'CPU', value: 5 }] }).catch((e: unknown) => e);
  assert.ok(agentCall instanceof HearthApiError);
  assert.equal(agentCall.credential, 'agent');
  const operatorCall = await client.listServers().catch((e: unknown) => e);
  assert.ok(operatorCall instanceof HearthApiError);
  assert.equal(operatorCall.credential, 'operator');
});

test('a redirect to another origin is reported, not followed: the token does not go there', async () => {
  const elsewhere: Array<{ url: string | undefined; token: string | string[] | undefined }> = [];
  const sink = createServer((req, res) => {
    elsewhere.push({ url: req.url, token: req.headers['x-auth-token'] });
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ servers: [], software_deployment: { id: 'd1', status: 'COMPLETE' } }));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  try {
    stub.handler = (req, res) => {
      res.writeHead(307, { location: `${sinkUrl}${req.url}` });
      res.end();
    };
    const client = createClient({ url: stub.url, token: 'admin-secret' });
    for (const call of [() => client.listServers(), () => client.createServer({ name: 'web' }), () => client.waitDeployment('d1', 1)]) {
      const error = await call().catch((e: unknown) => e);
      assert.ok(error instanceof HearthApiError, String(error));
      assert.equal(error.code, 'ERR_RESPONSE_INVALID');
      assert.equal(error.status, 307);
      assert.ok(error.message.includes(`redirect to ${sinkUrl}/v1/default/`), error.message);
      assert.match(error.message, /set HEARTH_URL/);
    }
    const stream = client.streamEvents({ reconnectDelayMs: 10 });
    const streamError = await stream.next().catch((e: unknown) => e);
    assert.ok(streamError instanceof HearthApiError, String(streamError));
    assert.equal(streamError.status, 307);
    assert.deepEqual(elsewhere, [], 'nothing reached the redirect target');
  } finally {
    await new Promise<void>((resolve) => sink.close(() => resolve()));
  }
});

test('an https:// URL for a plain-HTTP server is ERR_TLS saying to use http://, not "start hearth-server"', async () => {
  stub.handler = (_req, res) => json(res, 200, { servers: [] });
  const client = createClient({ url: stub.url.replace('http:', 'https:'), token: 'admin', retry: 0 });
  const error = await client.listServers().catch((e: unknown) => e);
  assert.ok(error instanceof HearthConnectionError, String(error));
  assert.equal(error.code, 'ERR_TLS');
  assert.match(
    error.message,
    /^TLS with https:\/\/127\.0\.0\.1:\d+ failed \((EPROTO|ERR_SSL_\w+): [^\n]+\): .*use an http:\/\/ URL in HEARTH_URL\.$/,
  );
});

test('an envelope field that is null or not an object is ERR_RESPONSE_INVALID, not a TypeError in the caller', async () => {
  const client = createClient({ url: stub.url, token: 'admin' });
  for (const servers of [null, 'all of them', 3]) {
    stub.handler = (_req, res) => json(res, 200, { servers });
    const error = await client.listServers().catch((e: unknown) => e);
    assert.ok(error instanceof HearthApiError, `${JSON.stringify(servers)}: ${String(error)}`);
    assert.equal(error.code, 'ERR_RESPONSE_INVALID');
    assert.match(error.message, /answered a "servers" field that is not an object or a list/);
  }
});

test('text envelope fields are read as text: server create returns os_collect_config_conf, a group its actuator_secret or null', async () => {
  const client = createClient({ url: stub.url, token: 'admin' });
  const server = { id: 's1', name: 'web' };
  stub.handler = (_req, res) =>
    json(res, 201, { server, credential: { token: 'k:s' }, os_collect_config: { hearth: {} }, os_collect_config_conf: '[hearth]\n' });
  const created = await client.createServer({ name: 'web' });
  assert.equal(created.os_collect_config_conf, '[hearth]\n');
  stub.handler = (_req, res) =>
    json(res, 201, { server, credential: { token: 'k:s' }, os_collect_config: {}, os_collect_config_conf: null });
  const error = await client.createServer({ name: 'web' }).catch((e: unknown) => e);
  assert.ok(error instanceof HearthApiError && error.code === 'ERR_RESPONSE_INVALID', String(error));
  for (const secret of ['s3cret', null]) {
    stub.handler = (_req, res) => json(res, 201, { scaling_group: { id: 'g1' }, actuator_secret: secret });
    assert.equal((await client.createScalingGroup('st', { name: 'g', min_size: 0, max_size: 1 } as never)).actuator_secret, secret);
  }
});
