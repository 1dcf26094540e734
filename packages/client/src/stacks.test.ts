import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from './client.ts';
import { json, useStubServer } from './stub-server.ts';
import { HearthApiError } from './errors.ts';

const stub = useStubServer();

const stack = { id: 'id-1', stack_name: 'web', project_id: 'p1', arn: 'arn', stack_status: 'CREATE_COMPLETE' };

test('createStack posts {stack_name} and unwraps {stack}', async () => {
  stub.handler = (_req, res) => json(res, 201, { stack });
  const client = createClient({ url: stub.url, token: 'admin', project: 'p1' });
  assert.deepEqual(await client.createStack({ stack_name: 'web' }), stack);
  const request = stub.seen.at(-1);
  assert.equal(request?.method, 'POST');
  assert.equal(request.url, '/v1/p1/stacks');
  assert.equal(request.headers['x-auth-token'], 'admin');
  assert.deepEqual(JSON.parse(request.body), { stack_name: 'web' });
});

test('listStacks unwraps {stacks}', async () => {
  stub.handler = (_req, res) => json(res, 200, { stacks: [stack] });
  const client = createClient({ url: stub.url, token: 'admin', project: 'p1' });
  assert.deepEqual(await client.listStacks(), [stack]);
  assert.equal(stub.seen.at(-1)?.url, '/v1/p1/stacks');
});

test('getStack by name follows the redirect to /stacks/{name}/{id}, keeping the token', async () => {
  stub.handler = (req, res) => {
    if (req.url === '/v1/p1/stacks/web') {
      res.writeHead(302, { location: '/v1/p1/stacks/web/id-1' });
      res.end();
    } else json(res, 200, { stack });
  };
  const client = createClient({ url: stub.url, token: 'admin', project: 'p1' });
  assert.deepEqual(await client.getStack('web'), stack);
  const [first, second] = stub.seen.slice(-2);
  assert.equal(first?.url, '/v1/p1/stacks/web');
  assert.equal(second?.url, '/v1/p1/stacks/web/id-1');
  assert.equal(second.headers['x-auth-token'], 'admin');
});

test('deleteStack sends DELETE; ERR_STACK_NOT_EMPTY comes back as a HearthApiError', async () => {
  stub.handler = (_req, res) => {
    res.writeHead(204);
    res.end();
  };
  const client = createClient({ url: stub.url, token: 'admin' });
  await client.deleteStack('web');
  assert.deepEqual([stub.seen.at(-1)?.method, stub.seen.at(-1)?.url], ['DELETE', '/v1/default/stacks/web']);

  stub.handler = (_req, res) =>
    json(res, 409, {
      code: 409,
      title: 'Conflict',
      explanation: 'x',
      error: { code: 'ERR_STACK_NOT_EMPTY', type: 'Conflict', message: 'Stack web still has servers.' },
    });
  const error = await client.deleteStack('web').catch((e: unknown) => e);
  assert.ok(error instanceof HearthApiError);
  assert.equal(error.status, 409);
  assert.equal(error.code, 'ERR_STACK_NOT_EMPTY');
});

test('a stack name is percent-encoded in the path', async () => {
  stub.handler = (_req, res) => json(res, 200, { stack });
  const client = createClient({ url: stub.url, token: 'admin' });
  await client.getStack('a b/c');
  assert.equal(stub.seen.at(-1)?.url, '/v1/default/stacks/a%20b%2Fc');
});
