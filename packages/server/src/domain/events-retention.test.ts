// The events retention on a real store (SQLite, or PostgreSQL in that pass of the suite): what it
// deletes and keeps, what readers see afterwards, how it stops, and how it reports a failure.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { DeleteResult } from 'kysely';
import type { Event, TimelineEntry } from '@hearth/protocol';
import { buildApp } from '../app.ts';
import { openStore, type Store } from '../store/store.ts';
import { ADMIN, createConfig, createDeployment, registerServer, testApp, testStore } from '../test-support.ts';
import { EventsRetention } from './events-retention.ts';
import type { TaskNotice } from './task-health.ts';

const DAY_MS = 86_400_000;

/** Writes `count` events of resource `resourceId`, `daysAgo` old, one ms apart (oldest first); returns their ids. */
async function writeEvents(
  store: Store,
  count: number,
  daysAgo: number,
  resourceId = 'r',
  projectId = 'default',
  message = `${daysAgo} days old`,
): Promise<number[]> {
  const start = Date.now() - daysAgo * DAY_MS;
  const ids: number[] = [];
  for (let from = 0; from < count; from += 500) {
    const rows = Array.from({ length: Math.min(500, count - from) }, (_, i) => ({
      project_id: projectId,
      time: new Date(start + from + i).toISOString(),
      type: 'test.event',
      resource_type: 'server',
      resource_id: resourceId,
      server_id: null,
      message,
      data: '{}',
    }));
    const inserted = await store.write(({ trx }) => trx.insertInto('events').values(rows).returning('id').execute());
    ids.push(...inserted.map(({ id }) => Number(id)));
  }
  return ids;
}

async function eventIds(store: Store, projectId?: string): Promise<number[]> {
  let select = store.reader.selectFrom('events').select('id');
  if (projectId !== undefined) select = select.where('project_id', '=', projectId);
  const rows = await select.orderBy('id').execute();
  return rows.map(({ id }) => Number(id));
}

/** The highest id of the project's events the retention recorded deleting (0 if none). */
async function prunedMark(store: Store, projectId = 'default'): Promise<number> {
  const row = await store.reader.selectFrom('events_pruned').select('through_id').where('project_id', '=', projectId).executeTakeFirst();
  return Number(row?.through_id ?? 0);
}

async function purgedTotal(app: FastifyInstance): Promise<number> {
  const metrics = (await app.inject('/metrics')).body;
  const line = /^hearth_events_purged_total (\d+)$/m.exec(metrics);
  assert.ok(line, 'hearth_events_purged_total is on /metrics');
  return Number(line[1]);
}

test('a purge deletes the events older than the retention, batch by batch, keeps the newer ones, and counts them on /metrics', async () => {
  const { app, done } = await testApp();
  try {
    const { store } = app.services;
    const before = await eventIds(store);
    const old = await writeEvents(store, 1200, 31);
    const kept = await writeEvents(store, 300, 29);
    const batches: number[] = [];
    const retention = new EventsRetention(store, { days: 30, batch: 500, onPurged: (count) => batches.push(count) }, (error) =>
      assert.fail(String(error)),
    );
    assert.equal(await retention.purge(), old.length);
    assert.deepEqual(batches, [500, 500, 200], 'oldest first, at most a batch per write');
    assert.deepEqual(await eventIds(store), [...before, ...kept]);
    assert.equal(await prunedMark(store), old.at(-1), 'the highest id deleted is recorded');
    assert.equal(await retention.purge(), 0, 'nothing left to delete');

    // The app's own task (default 30 days) counts what it deletes.
    await writeEvents(store, 7, 40);
    assert.equal(await purgedTotal(app), 0);
    assert.equal(await app.services.eventsRetention.purge(), 7);
    assert.equal(await purgedTotal(app), 7);
  } finally {
    await done();
  }
});

test('a retention of 0 days keeps every event, and starts no task', async () => {
  const { app, done } = await testApp();
  try {
    const { store } = app.services;
    await writeEvents(store, 50, 3650);
    const all = await eventIds(store);
    const retention = new EventsRetention(store, { days: 0 }, (error) => assert.fail(String(error)));
    retention.start(0, 10);
    await sleep(100);
    assert.equal(await retention.purge(), 0);
    await retention.stop();
    assert.deepEqual(await eventIds(store), all);
  } finally {
    await done();
  }
});

/** A GET on 127.0.0.1 with the admin token: its status and (for a reply that ends) its body. */
async function httpGet(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const response = await new Promise<IncomingMessage>((resolve, reject) =>
    httpRequest({ host: '127.0.0.1', port, path, headers: { ...ADMIN, ...headers } }, resolve)
      .on('error', reject)
      .end(),
  );
  if (response.statusCode === 200) {
    response.destroy();
    return { status: 200, body: '' };
  }
  let body = '';
  for await (const chunk of response as AsyncIterable<Buffer>) body += chunk.toString();
  return { status: response.statusCode ?? 0, body };
}

/** The ids of the first `count` events of an SSE stream of `url`. */
async function streamIds(app: FastifyInstance, url: string, count: number): Promise<number[]> {
  const { port } = app.server.address() as AddressInfo;
  const response = await new Promise<IncomingMessage>((resolve, reject) =>
    httpRequest({ host: '127.0.0.1', port, path: url, headers: ADMIN }, resolve).on('error', reject).end(),
  );
  assert.equal(response.statusCode, 200);
  const ids: number[] = [];
  let text = '';
  response.setEncoding('utf8');
  try {
    for await (const chunk of response as AsyncIterable<string>) {
      text += chunk;
      for (const match of text.matchAll(/^id: (\d+)\nevent: /gm)) ids.push(Number(match[1]));
      text = text.slice(text.lastIndexOf('\n\n') + 2);
      if (ids.length >= count) break;
    }
  } finally {
    response.destroy();
  }
  return ids.slice(0, count);
}

test('after a purge, a cursor from before it is refused (410, REST and stream) naming the oldest cursor to go on from, and a timeline shows what is kept', async () => {
  const { app, done } = await testApp();
  try {
    const { store } = app.services;
    const server = await registerServer(app);
    const deploymentId = await createDeployment(app, await createConfig(app), server.id);
    const timelineUrl = `/v1/default/software_deployments/${deploymentId}/timeline`;
    const timeline = async () => {
      const reply = await app.inject({ url: timelineUrl, headers: ADMIN });
      assert.equal(reply.statusCode, 200, reply.body);
      return reply.json<{ timeline: TimelineEntry[] }>().timeline;
    };
    assert.ok((await timeline()).length >= 1, 'the deployment has a timeline');
    // Everything so far is made 40 days old, then more happens to the deployment.
    await store.write(({ trx }) =>
      trx
        .updateTable('events')
        .set({ time: new Date(Date.now() - 40 * DAY_MS).toISOString() })
        .execute(),
    );
    const old = await eventIds(store);
    const heartbeat = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${deploymentId}/heartbeat`,
      headers: server.auth,
      payload: {},
    });
    assert.ok(heartbeat.statusCode < 300, heartbeat.body);
    await writeEvents(store, 5, 1, deploymentId);
    assert.equal(await app.services.eventsRetention.purge(), old.length);
    const oldestKept = (await eventIds(store))[0]!;
    assert.ok(oldestKept > old.at(-1)!);

    const expired = await app.inject({ url: `/v1/default/events?after=${old[0]}&limit=2`, headers: ADMIN });
    assert.equal(expired.statusCode, 410, expired.body);
    assert.deepEqual(expired.json<{ error: { code: string; details: unknown } }>().error.code, 'ERR_EVENT_CURSOR_EXPIRED');
    assert.deepEqual(expired.json<{ error: { details: unknown } }>().error.details, {
      cursor: String(old[0]),
      oldest_cursor: String(old.at(-1)),
    });
    assert.match(
      expired.json<{ error: { message: string } }>().error.message,
      new RegExp(`^Events after cursor ${old[0]} were deleted by the events retention: start again from cursor ${old.at(-1)};`),
    );
    // The cursor it names, and no cursor at all, go on from the oldest event kept.
    for (const after of [String(old.at(-1)), '', '0']) {
      const page = await app.inject({ url: `/v1/default/events?after=${after}&limit=2`, headers: ADMIN });
      assert.equal(page.statusCode, 200, page.body);
      assert.deepEqual(
        page.json<{ events: Event[] }>().events.map((event) => event.id),
        (await eventIds(store)).slice(0, 2),
      );
    }

    // The timeline shows the heartbeat and the events written since, none of the purged ones.
    const after = await timeline();
    assert.equal(after.filter((entry) => entry.type === 'test.event').length, 5);
    assert.ok(after.some((entry) => entry.type === 'deployment.heartbeat'));
    assert.ok(
      after.every((entry) => Date.parse(entry.time) > Date.now() - 2 * DAY_MS),
      JSON.stringify(after),
    );

    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const stream = await httpGet(port, `/v1/default/events/stream?after=${old[0]}`);
    assert.equal(stream.status, 410, stream.body);
    assert.equal(JSON.parse(stream.body).error.code, 'ERR_EVENT_CURSOR_EXPIRED');
    const resumed = await httpGet(port, '/v1/default/events/stream', { 'last-event-id': String(old[1]) });
    assert.equal(resumed.status, 410, 'a reconnect with Last-Event-ID below the mark is refused alike');
    assert.deepEqual(await streamIds(app, `/v1/default/events/stream?after=${old.at(-1)}`, 2), (await eventIds(store)).slice(0, 2));
  } finally {
    await done();
  }
});

test('closing the app stops a purge between batches: nothing is written after the close, nothing is rejected unhandled', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  const where = await testStore();
  const logged: string[] = [];
  const log = new Writable({ write: (line: Buffer, _encoding, next) => next(void logged.push(line.toString())) });
  try {
    const app = await buildApp({
      dataDir: where.dataDir,
      databaseUrl: where.databaseUrl,
      adminToken: 'admin-secret',
      secretKey: 'unit-test-secret-key-0123456789',
      logger: { level: 'error', stream: log },
      eventsRetentionDays: 30,
    });
    const { store, eventsRetention } = app.services;
    const old = await writeEvents(store, 30_000, 31);
    await eventsRetention.stop();
    // The app is closed as soon as the first batch has committed (a write whose result is a delete's):
    // polling for it let the whole purge finish first on a fast PostgreSQL.
    const write = store.write.bind(store);
    let closing: Promise<void> | undefined;
    store.write = (async (unit: Parameters<typeof write>[0]) => {
      const result = await write(unit);
      if (closing === undefined && result instanceof DeleteResult) closing = app.close();
      return result;
    }) as typeof store.write;
    // The app's task, now (a batch is 5,000 events, so this purge would take six).
    eventsRetention.start(0);
    for (let i = 0; i < 1000 && closing === undefined; i++) await sleep(5);
    assert.ok(closing, 'the purge committed a batch');
    await closing;
    const counted = async () => (await app.services.metrics.eventsPurged.get()).values[0]?.value ?? 0;
    const purged = await counted();
    assert.ok(purged > 0 && purged < old.length, `the purge was stopped after a batch (${purged} purged)`);
    await sleep(300);

    const reopened = openStore({ dataDir: where.dataDir, databaseUrl: where.databaseUrl });
    try {
      const left = await reopened.reader
        .selectFrom('events')
        .select((eb) => eb.fn.countAll<number>().as('count'))
        .where('message', '=', '31 days old')
        .executeTakeFirstOrThrow();
      assert.equal(Number(left.count), old.length - purged, 'no batch ran after the close');
    } finally {
      await reopened.close();
    }
    assert.deepEqual(logged, []);
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await where.remove();
  }
});

test('a purge that fails (the database cannot be reached) is reported through TaskHealth, once, and is not thrown', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  // Port 1 on loopback: nothing listens there, so every query is refused at once.
  const store = openStore({ dataDir: '/nonexistent', databaseUrl: 'postgres://hearth@127.0.0.1:1/hearth' });
  const notices: TaskNotice[] = [];
  const retention = new EventsRetention(store, { days: 30 }, (notice) => notices.push(notice as TaskNotice));
  try {
    retention.start(0, 20);
    for (let i = 0; i < 250 && notices.length === 0; i++) await sleep(20);
    await sleep(200); // a few more runs fail: no line for each
    await retention.stop();
    assert.equal(notices.length, 1, notices.map((notice) => notice.message).join('\n'));
    assert.equal(notices[0]!.level, 'error');
    assert.equal(notices[0]!.fields.code, 'ERR_STORE_UNAVAILABLE');
    assert.ok((notices[0]!.fields.failures as number) >= 1);
    assert.match(
      notices[0]!.message,
      /^events retention is failing \(ERR_STORE_UNAVAILABLE: .*ECONNREFUSED.*\): check that the database runs/,
    );
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await store.close();
  }
});

test("the count bound deletes each project's oldest events beyond it, batch by batch, records the highest deleted, and leaves other projects alone", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const { store } = app.services;
    await store.write(({ trx }) =>
      trx.insertInto('projects').values({ id: 'other', name: 'other', created_at: new Date().toISOString() }).execute(),
    );
    // Older than the age bound: deleted by age first, in the same run.
    const aged = await writeEvents(store, 3, 40, 'r', 'other');
    await writeEvents(store, 1300, 1);
    const other = await writeEvents(store, 40, 1, 'r', 'other');
    const all = await eventIds(store, 'default');
    const batches: number[] = [];
    const retention = new EventsRetention(
      store,
      { days: 30, maxPerProject: 500, batch: 300, onPurged: (count) => batches.push(count) },
      (error) => assert.fail(String(error)),
    );
    const deleted = all.length - 500;
    assert.equal(await retention.purge(), aged.length + deleted);
    assert.deepEqual(
      batches,
      [aged.length, ...Array<number>(Math.floor(deleted / 300)).fill(300), deleted % 300].filter(Boolean),
      'by age, then by count: oldest first, at most a batch per write',
    );
    assert.deepEqual(await eventIds(store, 'default'), all.slice(-500), 'the newest 500 are kept');
    assert.deepEqual(await eventIds(store, 'other'), other, 'a project under the bound keeps every event');
    assert.equal(await prunedMark(store), all.at(-501));
    assert.equal(await prunedMark(store, 'other'), aged.at(-1));
    assert.equal(await retention.purge(), 0, 'nothing beyond the bound left');

    // New events push out as many of the oldest.
    const newer = await writeEvents(store, 7, 0);
    assert.equal(await retention.purge(), 7);
    assert.deepEqual(await eventIds(store, 'default'), [...all.slice(-493), ...newer]);
    assert.deepEqual(await eventIds(store, 'other'), other);
    assert.equal(await prunedMark(store), all.at(-494));
  } finally {
    await done();
  }
});

test('a count bound of 0 keeps every event; with no age either, no task starts', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const { store } = app.services;
    await writeEvents(store, 600, 1);
    const all = await eventIds(store);
    const unbounded = new EventsRetention(store, { days: 30, maxPerProject: 0 }, (error) => assert.fail(String(error)));
    assert.equal(await unbounded.purge(), 0);
    const never = new EventsRetention(store, { days: 0, maxPerProject: 0 }, (error) => assert.fail(String(error)));
    never.start(0, 10);
    await sleep(100);
    await never.stop();
    assert.deepEqual(await eventIds(store), all);
    // The default bound (1,000,000) is far above these.
    assert.equal(await new EventsRetention(store, { days: 30 }, (error) => assert.fail(String(error))).purge(), 0);
    // A bound alone (no age) starts the task.
    const bounded = new EventsRetention(store, { days: 0, maxPerProject: 100 }, (error) => assert.fail(String(error)));
    bounded.start(0, 60_000);
    for (let i = 0; i < 200 && (await eventIds(store, 'default')).length > 100; i++) await sleep(20);
    await bounded.stop();
    assert.deepEqual(await eventIds(store, 'default'), all.slice(-100));
  } finally {
    await done();
  }
});

/**
 * Reads an SSE stream of `path` slowly: the first chunk, then nothing until `resume` resolves, then
 * until it ends, sends event `newest`, or 30 s have passed.
 */
async function slowStream(port: number, path: string, resume: Promise<void>, newest: number): Promise<{ ids: number[]; last: string }> {
  const response = await new Promise<IncomingMessage>((resolve, reject) =>
    httpRequest({ host: '127.0.0.1', port, path, headers: ADMIN }, resolve).on('error', reject).end(),
  );
  assert.equal(response.statusCode, 200);
  const ids: number[] = [];
  let text = '';
  let paused = false;
  response.setEncoding('utf8');
  const timer = setTimeout(() => response.destroy(), 30_000);
  try {
    for await (const chunk of response as AsyncIterable<string>) {
      text += chunk;
      const end = text.lastIndexOf('\n\n') + 2;
      if (end > 1) {
        const complete = text.slice(0, end);
        text = text.slice(end);
        for (const match of complete.matchAll(/^id: (\d+)\nevent: test\.event\n/gm)) ids.push(Number(match[1]));
        const last = complete.split('\n\n').at(-2) ?? '';
        if (last.startsWith('event: hearth.error') || ids.at(-1) === newest) return { ids, last };
      }
      if (!paused) {
        paused = true;
        await resume;
      }
    }
  } catch {
    // cut off after 30 s: what was read is checked
  } finally {
    clearTimeout(timer);
    response.destroy();
  }
  return { ids, last: '' };
}

test('a stream whose reader falls behind the count bound ends with ERR_EVENT_CURSOR_EXPIRED as its last message, never skipping', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const { store } = app.services;
    // 16 KiB messages: a page (500) is 8 MiB, more than the socket buffers take, so the stream waits on its reader.
    const big = 'x'.repeat(16_384);
    const all: number[] = [];
    for (let i = 0; i < 3; i++) all.push(...(await writeEvents(store, 500, 0, 'r', 'default', big)));
    const before = (await eventIds(store)).filter((id) => id < all[0]!);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    const reading = slowStream(port, `/v1/default/events/stream?after=${before.at(-1) ?? 0}`, resumed, all.at(-1)!);
    await sleep(300);
    const retention = new EventsRetention(store, { days: 30, maxPerProject: 10 }, (error) => assert.fail(String(error)));
    assert.equal(await retention.purge(), before.length + all.length - 10);
    resume();
    const { ids, last } = await reading;
    assert.deepEqual(ids, all.slice(0, ids.length), 'what it got has no gap');
    assert.ok(ids.length < all.length - 10, `the stream was behind the purge (${ids.length} events read)`);
    const [eventLine, dataLine] = last.split('\n');
    assert.equal(eventLine, 'event: hearth.error');
    const body = JSON.parse(dataLine!.slice('data: '.length)) as { code: number; error: { code: string; details: unknown } };
    assert.equal(body.code, 410);
    assert.equal(body.error.code, 'ERR_EVENT_CURSOR_EXPIRED');
    assert.deepEqual(body.error.details, { cursor: String(ids.at(-1)), oldest_cursor: String(all.at(-11)) });
  } finally {
    await done();
  }
});

test("the app's own task takes its count bound from eventsMaxPerProject", async () => {
  const where = await testStore();
  try {
    const app = await buildApp({
      dataDir: where.dataDir,
      databaseUrl: where.databaseUrl,
      adminToken: 'admin-secret',
      secretKey: 'unit-test-secret-key-0123456789',
      eventsMaxPerProject: 25,
    });
    try {
      // (Its first run is a minute away: this purge is the only one.)
      const written = await writeEvents(app.services.store, 60, 0);
      const all = await eventIds(app.services.store, 'default');
      assert.ok(all.length >= written.length);
      assert.equal(await app.services.eventsRetention.purge(), all.length - 25);
      assert.deepEqual(await eventIds(app.services.store, 'default'), written.slice(-25));
    } finally {
      await app.close();
    }
  } finally {
    await where.remove();
  }
});
