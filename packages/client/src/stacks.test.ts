import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from './client.ts';
import { HearthApiError } from './errors.ts';

/** A request the stub server saw. */
interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

const seen: Seen[] = [];
let handler: (req: Seen, res: ServerResponse) => void = (_req, res) => res.end();
const stub = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
    seen.push(request);
    handler(request, res);
  });
});
let url = '';

before(async () => {
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
});
after(() => new Promise<void>((resolve) => stub.close(() => resolve())));

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const stack = { id: 'id-1', stack_name: 'web', project_id: 'p1', arn: 'arn', stack_status: 'CREATE_COMPLETE' };

test('createStack posts {stack_name} and unwraps {stack}', async () => {
  handler = (_req, res) => json(res, 201, { stack });
  const client = createClient({ url, token: 'admin', project: 'p1' });
  assert.deepEqual(await client.createStack({ stack_name: 'web' }), stack);
  const request = seen.at(-1);
  assert.equal(request?.method, 'POST');
  assert.equal(request.url, '/v1/p1/stacks');
  assert.equal(request.headers['x-auth-token'], 'admin');
  assert.deepEqual(JSON.parse(request.body), { stack_name: 'web' });
});

test('listStacks unwraps {stacks}', async () => {
  handler = (_req, res) => json(res, 200, { stacks: [stack] });
  const client = createClient({ url, token: 'admin', project: 'p1' });
  assert.deepEqual(await client.listStacks(), [stack]);
  assert.equal(seen.at(-1)?.url, '/v1/p1/stacks');
});

test('getStack by name follows the redirect to /stacks/{name}/{id}, keeping the token', async () => {
  handler = (req, res) => {
    if (req.url === '/v1/p1/stacks/web') {
      res.writeHead(302, { location: '/v1/p1/stacks/web/id-1' });
      res.end();
    } else json(res, 200, { stack });
  };
  const client = createClient({ url, token: 'admin', project: 'p1' });
  assert.deepEqual(await client.getStack('web'), stack);
  const [first, second] = seen.slice(-2);
  assert.equal(first?.url, '/v1/p1/stacks/web');
  assert.equal(second?.url, '/v1/p1/stacks/web/id-1');
  assert.equal(second.headers['x-auth-token'], 'admin');
});

test('deleteStack sends DELETE; ERR_STACK_NOT_EMPTY comes back as a HearthApiError', async () => {
  handler = (_req, res) => {
    res.writeHead(204);
    res.end();
  };
  const client = createClient({ url, token: 'admin' });
  await client.deleteStack('web');
  assert.deepEqual([seen.at(-1)?.method, seen.at(-1)?.url], ['DELETE', '/v1/default/stacks/web']);

  handler = (_req, res) =>
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
  handler = (_req, res) => json(res, 200, { stack });
  const client = createClient({ url, token: 'admin' });
  await client.getStack('a b/c');
  assert.equal(seen.at(-1)?.url, '/v1/default/stacks/a%20b%2Fc');
});
