// The PostgreSQL store's own guarantees, on a real throwaway cluster: writes serialised across
// replicas, commits fanned out by LISTEN/NOTIFY (never echoed to the writer), a re-check after the
// listening connection drops, and outage errors recognised as 503s.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import pg from 'pg';
import { feedPayloads } from './postgres.ts';
import { openStore, type Store } from './store.ts';
import { isStoreUnavailable, isUnstorableText, isValueTooLong } from './unavailable.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';
import { skipUnlessPostgres, startPostgres, type PostgresCluster } from '../../../../test/helpers/postgres.ts';

const skip = skipUnlessPostgres();
let cluster: PostgresCluster | undefined;

before(async () => {
  if (!skip) cluster = await startPostgres();
});
after(async () => {
  await cluster?.stop();
});

/** Polls `check` every 10 ms until it holds or `ms` pass. */
async function eventually(check: () => boolean, ms: number, what: string): Promise<number> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > ms) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return Date.now() - started;
}

/** Two replicas' stores on one fresh database, each recording what the feed told it. */
async function twoReplicas(): Promise<{
  database: TestDatabase;
  stores: Array<{ store: Store; remote: string[]; local: string[]; resyncs: number }>;
  close: () => Promise<void>;
}> {
  const database = await createTestDatabase(cluster!.url);
  const stores = [0, 1].map(() => {
    const replica = { store: undefined as unknown as Store, remote: [] as string[], local: [] as string[], resyncs: 0 };
    replica.store = openStore({
      dataDir: '/nonexistent',
      databaseUrl: database.url,
      onCommit: (topics) => replica.local.push(...topics),
      onRemoteCommit: (topics) => replica.remote.push(...topics),
      onResync: () => replica.resyncs++,
    });
    return replica;
  });
  // Sequentially: the migrator's lock makes the second a no-op, but both start their listeners.
  for (const { store } of stores) await store.migrate();
  return {
    database,
    stores,
    async close() {
      for (const { store } of stores) await store.close();
      await database.drop();
    },
  };
}

test('feed payloads stay under NOTIFY’s 8000-byte limit and carry every topic once', () => {
  const topics = Array.from({ length: 2000 }, (_, i) => `deployment:${String(i).padStart(36, '0')}`);
  const payloads = feedPayloads('replica-1', topics);
  assert.ok(payloads.length > 1, 'split');
  const seen: string[] = [];
  for (const payload of payloads) {
    assert.ok(Buffer.byteLength(payload) < 8000, `payload of ${Buffer.byteLength(payload)} bytes`);
    const { o, t } = JSON.parse(payload) as { o: string; t: string[] };
    assert.equal(o, 'replica-1');
    seen.push(...t);
  }
  assert.deepEqual(seen, topics);
  assert.deepEqual(feedPayloads('r', []), []);
});

test('outage errors are recognised (503), other errors are not', () => {
  for (const error of [
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
    Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
    Object.assign(new Error('connection failure'), { code: '08006' }),
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'),
    new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })], 'all failed'),
    Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }),
  ]) {
    assert.equal(isStoreUnavailable(error), true, error.message);
  }
  for (const error of [
    Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }),
    Object.assign(new Error('syntax error'), { code: '42601' }),
    new TypeError('x is undefined'),
    'a string',
    null,
  ]) {
    assert.equal(isStoreUnavailable(error), false, String(error));
  }
  assert.equal(isValueTooLong(Object.assign(new Error('value too long for type character varying(255)'), { code: '22001' })), true);
  assert.equal(isUnstorableText(Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' })), true);
  assert.equal(isUnstorableText(Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' })), true);
  assert.equal(isValueTooLong(new Error('value too long')), false, 'only the SQLSTATE counts');
});

test('writes from two replicas are serialised: 2 × 40 concurrent read-then-write increments lose none', { skip }, async () => {
  const { stores, close } = await twoReplicas();
  try {
    const [a, b] = stores.map((r) => r.store);
    await a!.write(async ({ trx, now }) => {
      await trx.insertInto('projects').values({ id: 'counter', name: '0', created_at: now }).execute();
    });
    const increment = (store: Store) =>
      store.write(async ({ trx }) => {
        const row = await trx.selectFrom('projects').select('name').where('id', '=', 'counter').executeTakeFirstOrThrow();
        // A pause between the read and the write: without the write lock, the other replica's
        // transaction would read the same value here and one increment would be lost.
        await sql`select pg_sleep(0.002)`.execute(trx);
        await trx
          .updateTable('projects')
          .set({ name: String(Number(row.name) + 1) })
          .where('id', '=', 'counter')
          .execute();
      });
    // Sequential awaits inside each replica would batch nothing; fire them all at once, in several turns.
    const writes: Array<Promise<void>> = [];
    for (let i = 0; i < 40; i++) {
      writes.push(increment(a!), increment(b!));
      if (i % 8 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await Promise.all(writes);
    const row = await a!.reader.selectFrom('projects').select('name').where('id', '=', 'counter').executeTakeFirstOrThrow();
    assert.equal(row.name, '80');
  } finally {
    await close();
  }
});

test('a commit on one replica reaches the other’s feed within a second, and is not echoed to itself', { skip }, async () => {
  const { stores, close } = await twoReplicas();
  try {
    const [a, b] = stores;
    const started = Date.now();
    await a!.store.write(async ({ publish }) => {
      publish('deployment:one');
      publish('server:two');
    });
    assert.deepEqual(a!.local.sort(), ['deployment:one', 'server:two'], 'published locally on commit');
    const ms = await eventually(() => b!.remote.length >= 2, 1000, 'replica B heard A’s commit');
    assert.deepEqual(b!.remote.sort(), ['deployment:one', 'server:two']);
    assert.ok(Date.now() - started < 1000, `took ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(a!.remote.length, 0, 'A’s own commit is not fed back to A');

    // A failed unit (rolled back) notifies nobody.
    await assert.rejects(
      b!.store.write(async ({ trx, publish }) => {
        publish('deployment:rolled-back');
        await sql`select 1/0`.execute(trx);
      }),
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.ok(!a!.remote.includes('deployment:rolled-back'), 'a rolled-back write is not announced');
  } finally {
    await close();
  }
});

test('when the listening connection is killed, the replica reconnects, re-checks, and hears later commits', { skip }, async () => {
  const { database, stores, close } = await twoReplicas();
  try {
    const [a, b] = stores;
    const admin = new pg.Client({ connectionString: cluster!.url });
    await admin.connect();
    try {
      const killed = await admin.query<{ n: number }>(
        `select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where application_name = 'hearth-server feed' and datname = $1`,
        [new URL(database.url).pathname.slice(1)],
      );
      assert.equal(killed.rows[0]!.n, 2, 'both replicas’ feed connections were terminated');
    } finally {
      await admin.end();
    }
    await eventually(() => a!.resyncs === 1 && b!.resyncs === 1, 5000, 'both replicas re-listened and woke their waiters');
    await a!.store.write(async ({ publish }) => publish('deployment:after'));
    await eventually(() => b!.remote.includes('deployment:after'), 2000, 'B hears commits again');
  } finally {
    await close();
  }
});

test(
  'a store whose database is gone answers ERR_STORE_UNAVAILABLE from ping and rejects writes with an outage error',
  { skip },
  async () => {
    const database = await createTestDatabase(cluster!.url);
    const store = openStore({ dataDir: '/nonexistent', databaseUrl: database.url });
    try {
      await store.migrate();
      await store.ping();
      await database.drop(); // terminates every connection, and the database is gone
      await assert.rejects(store.ping(), (error: Error & { code?: string }) => error.code === 'ERR_STORE_UNAVAILABLE');
    } finally {
      await store.close();
    }
  },
);

test('a NUL character in a name is a coded 400 on PostgreSQL, never a 500, and nothing is stored', { skip }, async () => {
  const database = await createTestDatabase(cluster!.url);
  const { buildApp } = await import('../app.ts');
  const app = await buildApp({
    dataDir: '/nonexistent',
    databaseUrl: database.url,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
  });
  try {
    const headers = { 'x-auth-token': 'admin-secret' };
    const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers, payload: { name: 'a\u0000b' } });
    assert.equal(reply.statusCode, 400, reply.body);
    assert.equal(reply.json<{ error: { code: string } }>().error.code, 'ERR_REQUEST_INVALID');
    const list = await app.inject({ method: 'GET', url: '/v1/default/servers', headers });
    assert.deepEqual(list.json<{ servers: unknown[] }>().servers, []);
  } finally {
    await app.close();
    await database.drop();
  }
});
