import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from './client.ts';
import { json, useStubServer } from './stub-server.ts';
import { HearthApiError } from './errors.ts';

const stub = useStubServer();

const condition = { name: 'ready', stack_name: 'web', status: 'IN_PROGRESS', count: 3, received: 1 };

test('createWaitCondition posts the body under the stack and unwraps {wait_condition}', async () => {
  stub.handler = (_req, res) => json(res, 201, { wait_condition: condition });
  const client = createClient({ url: stub.url, token: 'admin', project: 'p1' });
  const created = await client.createWaitCondition('web', { name: 'ready', count: 3, timeout: 600, max_failures: 1 });
  assert.deepEqual(created, condition);
  const request = stub.lastSeen();
  assert.equal(request.method, 'POST');
  assert.equal(request.url, '/v1/p1/stacks/web/wait_conditions');
  assert.equal(request.headers['x-auth-token'], 'admin');
  assert.deepEqual(JSON.parse(request.body), { name: 'ready', count: 3, timeout: 600, max_failures: 1 });
});

test('list and get unwrap their envelopes; delete sends DELETE', async () => {
  const client = createClient({ url: stub.url, token: 'admin' });
  stub.handler = (_req, res) => json(res, 200, { wait_conditions: [condition] });
  assert.deepEqual(await client.listWaitConditions('web'), [condition]);
  assert.equal(stub.lastSeen().url, '/v1/default/stacks/web/wait_conditions');
  stub.handler = (_req, res) => json(res, 200, { wait_condition: condition });
  assert.deepEqual(await client.getWaitCondition('web', 'ready'), condition);
  assert.equal(stub.lastSeen().url, '/v1/default/stacks/web/wait_conditions/ready');
  stub.handler = (_req, res) => {
    res.writeHead(204);
    res.end();
  };
  await client.deleteWaitCondition('web', 'ready');
  assert.deepEqual([stub.lastSeen().method, stub.lastSeen().url], ['DELETE', '/v1/default/stacks/web/wait_conditions/ready']);
});

test('pollWaitCondition: plain GET first, then If-None-Match with ?wait=; 304 means not modified', async () => {
  stub.handler = (req, res) => {
    if (req.headers['if-none-match'] === '"v1"') {
      res.writeHead(304, { etag: '"v1"' });
      res.end();
    } else json(res, 200, { wait_condition: condition }, { etag: '"v1"' });
  };
  const client = createClient({ url: stub.url, token: 'admin' });
  const first = await client.pollWaitCondition('web', 'ready');
  assert.deepEqual(first, { modified: true, etag: '"v1"', waitCondition: condition });
  assert.equal(stub.lastSeen().url, '/v1/default/stacks/web/wait_conditions/ready');
  assert.equal(stub.lastSeen().headers['if-none-match'], undefined);

  const second = await client.pollWaitCondition('web', 'ready', { etag: '"v1"', wait: 3 });
  assert.deepEqual(second, { modified: false, etag: '"v1"' });
  assert.equal(stub.lastSeen().url, '/v1/default/stacks/web/wait_conditions/ready?wait=3');
  assert.equal(stub.lastSeen().headers['if-none-match'], '"v1"');
});

test('pollWaitCondition rejects a wait outside 0..60 without calling the server', async () => {
  const client = createClient({ url: stub.url, token: 'admin' });
  const before = stub.seen.length;
  await assert.rejects(client.pollWaitCondition('web', 'ready', { etag: '"v1"', wait: 61 }), RangeError);
  await assert.rejects(client.pollWaitCondition('web', 'ready', { wait: 1.5 }), RangeError);
  assert.equal(stub.seen.length, before);
});

test('pollWaitCondition throws ERR_RESPONSE_INVALID for a 200 without {wait_condition}', async () => {
  stub.handler = (_req, res) => json(res, 200, { something: 'else' });
  const client = createClient({ url: stub.url, token: 'admin' });
  const error = await client.pollWaitCondition('web', 'ready').catch((e: unknown) => e);
  assert.ok(error instanceof HearthApiError);
  assert.equal(error.code, 'ERR_RESPONSE_INVALID');
});

test('heartbeatWaitCondition posts the extension once (no retry of a POST)', async () => {
  let calls = 0;
  stub.handler = (_req, res) => {
    calls++;
    json(res, 503, { error: { code: 'ERR_STORE_UNAVAILABLE', message: 'later' } });
  };
  const client = createClient({ url: stub.url, token: 'admin' });
  const error = await client.heartbeatWaitCondition('web', 'ready', { extend: 120, message: 'still booting' }).catch((e: unknown) => e);
  assert.ok(error instanceof HearthApiError);
  assert.equal(calls, 1);
  const request = stub.lastSeen();
  assert.equal(request.url, '/v1/default/stacks/web/wait_conditions/ready/heartbeat');
  assert.deepEqual(JSON.parse(request.body), { extend: 120, message: 'still booting' });

  stub.handler = (_req, res) => json(res, 200, { wait_condition: condition });
  assert.deepEqual(await client.heartbeatWaitCondition('web', 'ready'), condition);
  assert.deepEqual(JSON.parse(stub.lastSeen().body), {});
});

test('a missing condition comes back as ERR_WAIT_CONDITION_NOT_FOUND', async () => {
  stub.handler = (_req, res) =>
    json(res, 404, {
      code: 404,
      title: 'Not Found',
      explanation: 'x',
      error: { code: 'ERR_WAIT_CONDITION_NOT_FOUND', type: 'NotFound', message: 'Wait condition nope does not exist.' },
    });
  const client = createClient({ url: stub.url, token: 'admin' });
  const error = await client.getWaitCondition('web', 'nope').catch((e: unknown) => e);
  assert.ok(error instanceof HearthApiError);
  assert.equal(error.status, 404);
  assert.equal(error.code, 'ERR_WAIT_CONDITION_NOT_FOUND');
});
