import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import Fastify from 'fastify';
import { ADMIN, testApp } from '../../test-support.ts';
import { resourceEvent } from '../../domain/events.ts';
import type { Services } from '../../services.ts';
import { createValidatorCompiler } from '../../validation.ts';
import { eventRoutes } from './events.ts';

/** Writes `count` events of about `size` bytes each (a few hundred per transaction). */
async function writeEvents(app: Awaited<ReturnType<typeof testApp>>['app'], count: number, size: number): Promise<void> {
  const resource = { project_id: 'default', resource_type: 'server', resource_id: 'backlog', server_id: null };
  for (let start = 0; start < count; start += 200) {
    await app.services.store.write(async ({ event }) => {
      for (let i = start; i < Math.min(count, start + 200); i++) event(resourceEvent(resource, 'test.backlog', `${i} ${'x'.repeat(size)}`));
    });
  }
}

test('an event stream whose client stops reading holds one page, not the whole backlog, and then resumes without a gap', async () => {
  const { app, done } = await testApp();
  const serverSockets: Socket[] = [];
  let client: Socket | undefined;
  try {
    const eventCount = 6000;
    await writeEvents(app, eventCount, 4000); // ~24 MB of backlog
    app.server.on('connection', (socket: Socket) => serverSockets.push(socket));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    client = connect({ host: '127.0.0.1', port });
    await new Promise((resolve) => client!.once('connect', resolve));
    client.write('GET /v1/default/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: admin-secret\r\n\r\n');
    client.pause();
    // Let the server write what it will while the client reads nothing.
    let queued = -1;
    for (let i = 0; i < 40; i++) {
      await sleep(100);
      const now = serverSockets.reduce((sum, s) => sum + s.writableLength, 0);
      if (now === queued && now > 0) break;
      queued = now;
    }
    // One page is 500 events of ~4 KB (~2 MB); the whole backlog would be ~24 MB less what the kernel took.
    assert.ok(queued < 4 * 1024 * 1024, `the server queued ${queued} bytes for a client that reads nothing`);

    // The client reads again: every event arrives once, in order.
    let text = '';
    const ids: number[] = [];
    client.setEncoding('utf8');
    client.on('data', (chunk: string) => {
      text += chunk;
      for (let cut = text.indexOf('\n\n'); cut >= 0; cut = text.indexOf('\n\n')) {
        const id = /^id: (\d+)$/m.exec(text.slice(0, cut));
        if (id) ids.push(Number(id[1]));
        text = text.slice(cut + 2);
      }
    });
    client.resume();
    for (let i = 0; i < 300 && ids.length < eventCount; i++) await sleep(100);
    assert.equal(ids.length, eventCount);
    assert.deepEqual(
      ids,
      ids.map((_, i) => ids[0]! + i),
    );
  } finally {
    client?.destroy();
    await done();
  }
});

test('an event stream whose client never reads again does not hold up closing the app', async () => {
  const { app, done } = await testApp();
  let client: Socket | undefined;
  try {
    await writeEvents(app, 3000, 4000);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    client = connect({ host: '127.0.0.1', port });
    await new Promise((resolve) => client!.once('connect', resolve));
    client.write('GET /v1/default/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: admin-secret\r\n\r\n');
    client.pause();
    await sleep(500);
    const closed = await Promise.race([app.close().then(() => true), sleep(5000).then(() => false)]);
    assert.ok(closed, 'app.close() waited on a stream whose client reads nothing');
  } finally {
    client?.destroy();
    await done();
  }
});

/** An open event stream on a listening app: the text received so far, and a wait for some of it. */
async function openStream(port: number, query: string, headers: Record<string, string> = {}) {
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path: `/v1/default/events/stream${query}`, headers: { ...ADMIN, ...headers } },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
  let text = '';
  response.setEncoding('utf8');
  response.on('data', (chunk: string) => (text += chunk));
  return {
    status: response.statusCode,
    text: () => text,
    /** The ids of the events received so far, in order. */
    ids: () => [...text.matchAll(/^id: (\d+)\nevent: .*\ndata: /gm)].map((m) => Number(m[1])),
    async waitFor(what: RegExp, ms = 5000): Promise<void> {
      for (let waited = 0; !what.test(text); waited += 20) {
        if (waited >= ms) assert.fail(`no ${what} within ${ms} ms; received: ${text}`);
        await sleep(20);
      }
    },
    close: () => response.destroy(),
  };
}

const serverResource = (id: string) => ({ project_id: 'default', resource_type: 'server', resource_id: id, server_id: null });

test('a list cursor beyond the newest event gets an empty page whose next_cursor still sees the next event', async () => {
  const { app, done } = await testApp();
  try {
    await app.services.store.write(async ({ event }) => {
      for (let i = 0; i < 3; i++) event(resourceEvent(serverResource('a'), 'test.event', `event ${i}`));
    });
    const newest = (await app.inject({ url: '/v1/default/events', headers: ADMIN })).json<{ next_cursor: string }>().next_cursor;
    const ahead = await app.inject({ url: '/v1/default/events?after=999999', headers: ADMIN });
    assert.equal(ahead.statusCode, 200);
    const page = ahead.json<{ events: unknown[]; next_cursor: string }>();
    assert.deepEqual(page.events, []);
    assert.equal(page.next_cursor, newest, 'the cursor comes back at the newest event, not echoed');

    await app.services.store.write(async ({ event }) => event(resourceEvent(serverResource('a'), 'test.event', 'later')));
    const next = await app.inject({ url: `/v1/default/events?after=${page.next_cursor}`, headers: ADMIN });
    assert.deepEqual(
      next.json<{ events: Array<{ message: string }> }>().events.map((e) => e.message),
      ['later'],
    );
    // A filtered page passes over the events that do not match ('later'); at the newest event, the
    // cursor stays where it is. A malformed one is a coded 400.
    const later = next.json<{ next_cursor: string }>().next_cursor;
    assert.ok(Number(later) > Number(newest));
    const filtered = await app.inject({ url: `/v1/default/events?after=${newest}&type=none`, headers: ADMIN });
    assert.deepEqual(filtered.json<{ events: unknown[]; next_cursor: string }>(), { events: [], next_cursor: later });
    const atHead = await app.inject({ url: `/v1/default/events?after=${later}&type=none`, headers: ADMIN });
    assert.equal(atHead.json<{ next_cursor: string }>().next_cursor, later);
    const bad = await app.inject({ url: '/v1/default/events?after=1e3', headers: ADMIN });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json<{ error: { code: string } }>().error.code, 'ERR_EVENT_CURSOR_INVALID');
  } finally {
    await done();
  }
});

test('a stream from a cursor beyond the newest event follows new events, and says where it resumes', async () => {
  const { app, done } = await testApp();
  let stream: Awaited<ReturnType<typeof openStream>> | undefined;
  try {
    await app.services.store.write(async ({ event }) => event(resourceEvent(serverResource('a'), 'test.event', 'first')));
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    stream = await openStream(port, '?after=999999');
    assert.equal(stream.status, 200);
    await stream.waitFor(/^id: 1\n\n/m);
    await app.services.store.write(async ({ event }) => event(resourceEvent(serverResource('a'), 'test.event', 'second')));
    await stream.waitFor(/"message":"second"/);
    assert.deepEqual(stream.ids(), [2]);
  } finally {
    stream?.close();
    await done();
  }
});

test('a reconnect with Last-Event-ID resumes after it, not from the ?after of the original URL', async () => {
  const { app, done } = await testApp();
  let stream: Awaited<ReturnType<typeof openStream>> | undefined;
  try {
    await app.services.store.write(async ({ event }) => {
      for (let i = 1; i <= 5; i++) event(resourceEvent(serverResource('a'), 'test.event', `event ${i}`));
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    // What an EventSource sends when it reconnects to `...?after=1` after receiving event 3.
    stream = await openStream(port, '?after=1', { 'last-event-id': '3' });
    await stream.waitFor(/^id: 5\n/m);
    assert.deepEqual(stream.ids(), [4, 5]);
    stream.close();
    // An empty Last-Event-ID is no cursor: ?after counts.
    stream = await openStream(port, '?after=4', { 'last-event-id': '' });
    await stream.waitFor(/^id: 5\n/m);
    assert.deepEqual(stream.ids(), [5]);
    stream.close();
    const bad = await app.inject({ url: '/v1/default/events/stream?after=1', headers: { ...ADMIN, 'last-event-id': 'x' } });
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json<{ error: { code: string } }>().error.code, 'ERR_EVENT_CURSOR_INVALID');
  } finally {
    stream?.close();
    await done();
  }
});

/**
 * The stream routes alone on an app of their own, with a short stall limit (the app's is a minute),
 * over the services of `services`; the warn lines it logs are collected.
 */
async function streamOnlyApp(services: Services, streamStallMs: number) {
  const warnings: string[] = [];
  const app = Fastify({
    logger: { level: 'warn', stream: { write: (line: string) => void warnings.push(JSON.parse(line).msg as string) } },
  });
  app.setValidatorCompiler(createValidatorCompiler());
  await app.register(eventRoutes, { prefix: '/v1/:project_id', services, streamStallMs });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as AddressInfo).port, warnings };
}

/** Counts the events in an SSE text as it arrives; returns the count so far. */
function eventCounter(client: Socket): () => number {
  let text = '';
  let count = 0;
  client.setEncoding('utf8');
  client.on('data', (chunk: string) => {
    text += chunk;
    for (let cut = text.indexOf('\n\n'); cut >= 0; cut = text.indexOf('\n\n')) {
      if (/^id: \d+\nevent: /m.test(text.slice(0, cut))) count++;
      text = text.slice(cut + 2);
    }
  });
  return () => count;
}

test('an event stream whose client reads nothing is cut off with a log line; a slow client that reads is not', async () => {
  const { app, done } = await testApp();
  let streams: Awaited<ReturnType<typeof streamOnlyApp>> | undefined;
  const clients: Socket[] = [];
  try {
    const eventCount = 3000;
    await writeEvents(app, eventCount, 4000); // ~12 MB: more than the socket buffers take
    // A stall limit 10x the slow reader's pauses: a loaded machine delays its reads, never by a whole second.
    streams = await streamOnlyApp(app.services, 1000);
    const open = async () => {
      const client = connect({ host: '127.0.0.1', port: streams!.port });
      clients.push(client);
      await new Promise((resolve) => client.once('connect', resolve));
      client.write('GET /v1/default/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Auth-Token: admin-secret\r\n\r\n');
      return client;
    };

    // A client that reads nothing: cut off once it has taken nothing for the stall limit.
    // (Its own end of the connection cannot tell: a paused socket never reads up to the close.)
    let cutOff = false;
    streams.app.server.once('connection', (socket: Socket) => socket.once('close', () => (cutOff = true)));
    (await open()).pause();
    for (let i = 0; i < 200 && !cutOff; i++) await sleep(50);
    assert.ok(cutOff, 'the stream of a client that reads nothing is still open after 10 s');
    assert.ok(
      streams.warnings.some((line) => /^event stream cut off: its client took nothing of the last \d+ bytes for 1 s/.test(line)),
      streams.warnings.join('\n'),
    );

    // A client that reads a little now and then (never waiting as long as the limit) gets every event:
    // 128 KiB every 100 ms, so a page of events (2 MB here) takes longer than the limit to reach it.
    streams.warnings.length = 0;
    const slow = await open();
    const received = eventCounter(slow);
    let taken = 0;
    slow.on('data', (chunk: string) => {
      taken += chunk.length;
      if (taken >= 128 * 1024) slow.pause();
    });
    const reader = setInterval(() => {
      taken = 0;
      slow.resume();
    }, 100);
    try {
      for (let i = 0; i < 300 && received() < eventCount && !slow.destroyed; i++) await sleep(100);
    } finally {
      clearInterval(reader);
    }
    assert.equal(received(), eventCount, streams.warnings.join('\n'));
    assert.deepEqual(streams.warnings, []);
  } finally {
    for (const client of clients) client.destroy();
    await streams?.app.close();
    await done();
  }
});
