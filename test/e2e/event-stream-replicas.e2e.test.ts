// The event stream with several replicas on one PostgreSQL: a stream on replica B follows what was
// written through replica A, in order, without loss or duplicates, while PostgreSQL restarts; and a
// stream asked for while PostgreSQL is down is a coded 503, not a 200 that ends at once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Event } from '@hearth/protocol';
import { createClient } from '../../packages/client/src/index.ts';
import { createTestDatabase, postgresTestPass, type TestDatabase } from '../../packages/server/src/store/test-database.ts';
import { skipUnlessPostgres, startPostgres, type PostgresCluster } from '../helpers/postgres.ts';
import { ADMIN_TOKEN, admin, call, databaseName, errorCode, query, spawnReplica, until, type Replica } from './replica-support.ts';

// This file starts its own cluster, so the suite's PostgreSQL pass (HEARTH_TEST_STORE=postgres) need not run it again.
const skip = skipUnlessPostgres() || (postgresTestPass() && 'runs in the first pass, on a cluster of its own');
const options = { skip, timeout: 180_000 };

let cluster: PostgresCluster | undefined;
before(async () => {
  if (!skip) cluster = await startPostgres();
});
after(async () => {
  await cluster?.stop();
});

/** Runs `body` with replicas A and B on a fresh database; stops them and drops it afterwards. */
async function withReplicas(body: (a: Replica, b: Replica) => Promise<void>): Promise<void> {
  const database: TestDatabase = await createTestDatabase(cluster!.url);
  // The throwaway cluster runs with synchronous_commit=off, which lets a crash (kill is -m immediate)
  // lose commits already acknowledged; this database gets a production's durability back.
  await query(cluster!.url, `alter database "${databaseName(database.url)}" set synchronous_commit = on`);
  const started = await Promise.allSettled(['A', 'B'].map((name) => spawnReplica({ name, databaseUrl: database.url })));
  const replicas = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  try {
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    await body(replicas[0]!, replicas[1]!);
  } finally {
    await Promise.all(replicas.map((replica) => replica.stop()));
    await database.drop();
  }
}

/** Registers servers `names` through a replica, one after the other (each writes one event). */
async function registerServers(replica: Replica, names: string[]): Promise<void> {
  for (const name of names) {
    const reply = await admin(replica)('POST', '/servers', { name });
    assert.equal(reply.status, 201, `register ${name} on ${replica.name}: ${JSON.stringify(reply.body)}`);
  }
}

test('a stream on replica B gets the events written through replica A in order, across a PostgreSQL restart', options, async () => {
  await withReplicas(async (a, b) => {
    const controller = new AbortController();
    const received: Event[] = [];
    const client = createClient({ url: b.url, token: ADMIN_TOKEN });
    const following = (async () => {
      for await (const event of client.streamEvents({ signal: controller.signal, reconnectDelayMs: 100, maxReconnectDelayMs: 500 })) {
        received.push(event);
      }
    })();
    try {
      await registerServers(a, ['a1', 'a2', 'a3']);
      await until('3 events on B', 10_000, async () => (received.length >= 3 ? true : undefined));
      await cluster!.restart();
      await until('A writes again', 30_000, async () => ((await admin(a)('GET', '/servers')).status === 200 ? true : undefined), 200);
      await registerServers(a, ['a4', 'a5', 'a6']);
      await until('6 events on B', 30_000, async () => (received.length >= 6 ? true : undefined));
      const listed = await admin(a)<{ events: Event[] }>('GET', '/events');
      assert.deepEqual(
        received.map((e) => e.id),
        listed.body.events.map((e) => e.id),
        'every event once, in the order of the log',
      );
      assert.deepEqual(
        received.map((e) => e.message.split(' ')[1]),
        ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'],
      );
    } finally {
      controller.abort();
      await following.catch(() => undefined);
    }
  });
});

test('a stream asked for while PostgreSQL is down is 503 ERR_STORE_UNAVAILABLE, and works once it is back', options, async () => {
  await withReplicas(async (a, b) => {
    await registerServers(a, ['before']);
    // B has served this operator before (what it caches about the caller is warm, as in production).
    assert.equal((await admin(b)('GET', '/events')).status, 200);
    await cluster!.kill();
    try {
      // A 200 here would be a stream that ends at once: the client would take the server for healthy
      // and reconnect at once, again and again, instead of backing off.
      const stream = await call('GET', `${b.url}/v1/default/events/stream`, {
        headers: { 'x-auth-token': ADMIN_TOKEN },
        timeoutMs: 20_000,
      });
      assert.equal(stream.status, 503, JSON.stringify(stream.body));
      assert.equal(errorCode(stream), 'ERR_STORE_UNAVAILABLE');
    } finally {
      await cluster!.start();
    }
    const client = createClient({ url: b.url, token: ADMIN_TOKEN });
    const first = await until(
      'the stream on B',
      30_000,
      async () => {
        try {
          for await (const event of client.streamEvents({ signal: AbortSignal.timeout(10_000) })) return event;
        } catch {
          return undefined; // still 503: the pool reconnects
        }
        return undefined;
      },
      500,
    );
    assert.match(first.message, /before/);
  });
});
