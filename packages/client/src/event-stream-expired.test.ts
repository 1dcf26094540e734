import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from './client.ts';
import { HearthApiError } from './errors.ts';
import { json, useStubServer } from './stub-server.ts';

// A cursor below what hearth-server's events retention deleted: the stream's error is thrown, once,
// never answered by reconnecting (the server would refuse every reconnect the same way).

const stub = useStubServer();

const EXPIRED = {
  code: 410,
  title: 'Error',
  explanation: 'Events after cursor 7 were deleted by the events retention: start again from cursor 900; the events up to it are gone.',
  error: {
    code: 'ERR_EVENT_CURSOR_EXPIRED',
    type: 'ERR_EVENT_CURSOR_EXPIRED',
    message: 'Events after cursor 7 were deleted by the events retention: start again from cursor 900; the events up to it are gone.',
    details: { cursor: '7', oldest_cursor: '900' },
  },
};

function assertExpired(error: unknown): true {
  assert.ok(error instanceof HearthApiError, String(error));
  assert.equal(error.status, 410);
  assert.equal(error.code, 'ERR_EVENT_CURSOR_EXPIRED');
  assert.deepEqual(error.details, { cursor: '7', oldest_cursor: '900' });
  return true;
}

test('a stream that ends with a hearth.error message throws that error after the events before it, and does not reconnect', async () => {
  stub.handler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(
      `: hearth events\n\nid: 7\nevent: server.created\ndata: ${JSON.stringify({ id: 7, type: 'server.created' })}\n\n` +
        `event: hearth.error\ndata: ${JSON.stringify(EXPIRED)}\n\n`,
    );
  };
  const client = createClient({ url: stub.url, token: 'admin' });
  const ids: number[] = [];
  const reconnects: unknown[] = [];
  // Bounded: a client that reconnected would be stopped after a few tries (and the test fail).
  const controller = new AbortController();
  const onReconnect = (info: unknown) => (reconnects.push(info) >= 3 ? controller.abort() : undefined);
  await assert.rejects(async () => {
    for await (const event of client.streamEvents({ after: '6', reconnectDelayMs: 10, onReconnect, signal: controller.signal })) {
      ids.push(event.id);
    }
  }, assertExpired);
  assert.deepEqual(ids, [7]);
  assert.deepEqual(reconnects, []);
  assert.equal(stub.seen.filter((r) => r.url.includes('/events/stream')).length, 1);
});

test('a reconnect refused with 410 ERR_EVENT_CURSOR_EXPIRED throws it instead of reconnecting again', async () => {
  let connections = 0;
  stub.handler = (_req, res) => {
    connections++;
    if (connections > 1) return json(res, 410, EXPIRED);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`id: 7\nevent: server.created\ndata: ${JSON.stringify({ id: 7, type: 'server.created' })}\n\n`);
  };
  const client = createClient({ url: stub.url, token: 'admin' });
  const reconnects: unknown[] = [];
  const controller = new AbortController();
  const onReconnect = (info: { after: string | undefined }) => (reconnects.push(info.after) >= 3 ? controller.abort() : undefined);
  await assert.rejects(async () => {
    for await (const _event of client.streamEvents({ reconnectDelayMs: 10, onReconnect, signal: controller.signal })) {
      // the one event before the drop
    }
  }, assertExpired);
  assert.deepEqual(reconnects, ['7']);
  assert.equal(connections, 2);
});
