import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from './client.ts';
import { useStubServer } from './stub-server.ts';

const stub = useStubServer();

test('the event stream resumes from an id sent without data, not from the cursor it started with', async () => {
  // What hearth-server sends for a cursor beyond its newest event (a restored database): where it
  // follows from, as an id without data; then the connection drops before any event.
  let connections = 0;
  stub.handler = (_req, res) => {
    connections++;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (connections === 1) res.end(': hearth events\n\n: cursor 99 is beyond the newest event; following from 4\nid: 4\n\n');
    else res.write(`id: 5\nevent: server.created\ndata: ${JSON.stringify({ id: 5, type: 'server.created' })}\n\n`);
  };
  const controller = new AbortController();
  const client = createClient({ url: stub.url, token: 'admin' });
  const ids: number[] = [];
  const reconnects: Array<string | undefined> = [];
  for await (const event of client.streamEvents({
    after: '99',
    signal: controller.signal,
    reconnectDelayMs: 10,
    onReconnect: (info) => reconnects.push(info.after),
  })) {
    ids.push(event.id);
    controller.abort();
  }
  assert.deepEqual(ids, [5], 'the id-only message is no event');
  assert.deepEqual(reconnects, ['4']);
  const resumed = stub.seen.filter((r) => r.url.includes('/events/stream')).at(-1);
  assert.equal(resumed?.url, '/v1/default/events/stream?after=4');
  assert.equal(resumed.headers['last-event-id'], '4');
});
