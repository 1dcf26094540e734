// `deployment wait` and `waitcondition wait` through the real client against a server that accepts
// connections and never answers: they give up at their own --timeout (exit 2), not a client timeout later.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type ServerResponse } from 'node:http';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { runWithClient } from './test-support.ts';

/** Before the fix these took about 95 s each; fail well before that. */
const BOUNDED = { timeout: 15_000 };

const DEPLOYMENT_ID = 'd1d1d1d1-0000-4000-8000-000000000001';

/** A listener that accepts connections and never answers. */
const silentSockets = new Set<Socket>();
const silent = createServer((socket) => {
  silentSockets.add(socket);
  socket.on('error', () => undefined);
  socket.on('close', () => silentSockets.delete(socket));
});

/** A server that answers a plain GET of the deployment (IN_PROGRESS) but never answers a long-poll. */
const held = new Set<ServerResponse>();
const halfAnswering = createHttpServer((req, res) => {
  if (req.url?.includes('wait=') === true) {
    held.add(res);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ software_deployment: { id: DEPLOYMENT_ID, status: 'IN_PROGRESS', status_reason: null } }));
});

const urlOf = (server: { address(): unknown }): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

before(async () => {
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => halfAnswering.listen(0, '127.0.0.1', resolve));
});

after(async () => {
  for (const socket of silentSockets) socket.destroy();
  for (const res of held) res.destroy();
  halfAnswering.closeAllConnections();
  await new Promise<void>((resolve) => silent.close(() => resolve()));
  await new Promise<void>((resolve) => halfAnswering.close(() => resolve()));
});

test('deployment wait --timeout gives up at its deadline with exit 2 when the server never answers', BOUNDED, async () => {
  const started = Date.now();
  const result = await runWithClient(['deployment', 'wait', DEPLOYMENT_ID, '--timeout', '2'], {
    HEARTH_URL: urlOf(silent),
    HEARTH_TOKEN: 'admin',
  });
  const tookMs = Date.now() - started;
  assert.equal(result.code, 2, result.stderr);
  assert.ok(tookMs < 5000, `${tookMs} ms`);
  assert.match(result.stderr, /deployment d1d1d1d1-0000-4000-8000-000000000001: fetching, 1 s elapsed/);
  assert.match(result.stderr, /deployment d1d1d1d1-0000-4000-8000-000000000001: no answer from hearth-server after 2 s\n/);
  assert.match(result.stderr, /hearth: hearth-server did not answer about deployment d1d1d1d1-\S+ within 2 s \(--timeout\)\n/);
  assert.equal(result.stdout, '');
});

test('deployment wait --timeout ends a long-poll the server holds past the deadline, with the status last seen', BOUNDED, async () => {
  const started = Date.now();
  const result = await runWithClient(['deployment', 'wait', DEPLOYMENT_ID, '--timeout', '2', '--json'], {
    HEARTH_URL: urlOf(halfAnswering),
    HEARTH_TOKEN: 'admin',
  });
  assert.equal(result.code, 2, result.stderr);
  assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
  assert.match(result.stderr, /hearth: deployment \S+ is still IN_PROGRESS after 2 s \(--timeout\)/);
  assert.equal(JSON.parse(result.stdout).software_deployment.status, 'IN_PROGRESS');
});

test('waitcondition wait --timeout gives up at its deadline with exit 2, showing the time elapsed while fetching', BOUNDED, async () => {
  const started = Date.now();
  const result = await runWithClient(['waitcondition', 'wait', 'ready', '--stack', 'web', '--timeout', '2'], {
    HEARTH_URL: urlOf(silent),
    HEARTH_TOKEN: 'admin',
  });
  const tookMs = Date.now() - started;
  assert.equal(result.code, 2, result.stderr);
  assert.ok(tookMs < 5000, `${tookMs} ms`);
  assert.match(result.stderr, /wait condition ready: fetching, 1 s elapsed/);
  assert.match(result.stderr, /hearth: hearth-server did not answer about wait condition ready within 2 s \(--timeout\)/);
  assert.equal(result.stdout, '');
});
