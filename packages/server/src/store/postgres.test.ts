// The PostgreSQL store's own guarantees, on a real throwaway cluster: writes serialised across
// replicas, commits fanned out by LISTEN/NOTIFY (never echoed to the writer), a re-check after the
// listening connection drops or goes silent, outage errors recognised as 503s, and bounded waits
// (a dead lock holder, a busy lock, a silent connection, a read pool full of slow reads).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { sql } from 'kysely';
import pg from 'pg';
import { idleConnectionLossReporter, WRITE_LOCK, writeLockSql, type PostgresLimits } from './postgres.ts';
import { TaskNotice } from '../domain/task-health.ts';
import { feedPayloads } from './postgres-feed.ts';
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

/** Settles with `promise`, or rejects once `ms` pass: a hang fails the test instead of stalling it. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
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
    Object.assign(new Error('cannot execute INSERT in a read-only transaction'), { code: '25006' }),
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
    const commitMs = Date.now() - started;
    assert.deepEqual(a!.local.sort(), ['deployment:one', 'server:two'], 'published locally on commit');
    // Hearing it costs one delivery after the commit's own round trips: a second, or more on a
    // machine so loaded that the commit itself was slow (a lost NOTIFY is never heard at all).
    const allowed = Math.max(1000, 10 * commitMs);
    const ms = await eventually(() => b!.remote.length >= 2, allowed, `replica B heard A’s commit (committed in ${commitMs} ms)`);
    assert.deepEqual(b!.remote.sort(), ['deployment:one', 'server:two'], `heard in ${ms} ms`);

    // PostgreSQL delivers notifications in commit order: once A hears a later commit of B's, an
    // echo of A's own commit, or a rolled-back write of B's, would have reached it before.
    const barrier = async (topic: string) => {
      await b!.store.write(async ({ publish }) => publish(topic));
      await eventually(() => a!.remote.includes(topic), Math.max(5000, 10 * commitMs), `replica A heard B’s ${topic}`);
    };
    await barrier('barrier:one');
    assert.deepEqual(a!.remote, ['barrier:one'], 'A’s own commit is not fed back to A');

    // A failed unit (rolled back) notifies nobody.
    await assert.rejects(
      b!.store.write(async ({ trx, publish }) => {
        publish('deployment:rolled-back');
        await sql`select 1/0`.execute(trx);
      }),
    );
    await barrier('barrier:two');
    assert.deepEqual(a!.remote, ['barrier:one', 'barrier:two'], 'a rolled-back write is not announced');
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

/** Short limits, so a test waits seconds, not the defaults' tens of seconds. */
const SHORT_LIMITS: PostgresLimits = { idleInTransactionMs: 1_000, writeLockWaitMs: 3_000, feedCheckMs: 500, queryTimeoutMs: 5_000 };

/** The connections of a store's read pool (READ_CONNECTIONS in store.ts). */
const READ_CONNECTIONS = 9;
/** An advisory lock key of the tests' own (not the store's WRITE_LOCK). */
const READ_BLOCK = 0x7465_7374;

/** A fresh migrated database and a store on it with SHORT_LIMITS. */
async function storeWithShortLimits(): Promise<{ database: TestDatabase; store: Store; close: () => Promise<void> }> {
  const database = await createTestDatabase(cluster!.url);
  const store = openStore({ dataDir: '/nonexistent', databaseUrl: database.url, postgresLimits: SHORT_LIMITS });
  await store.migrate();
  return {
    database,
    store,
    async close() {
      await store.close();
      await database.drop();
    },
  };
}

/** Writes a project row through `store`; resolves after its commit. */
function writeProject(store: Store, id: string): Promise<void> {
  return store.write(async ({ trx, now }) => {
    await trx.insertInto('projects').values({ id, name: id, created_at: now }).execute();
  });
}

test(
  'a replica that stops mid-transaction holding the write lock blocks the others only until PostgreSQL ends its session',
  { skip },
  async () => {
    const { database, store, close } = await storeWithShortLimits();
    // The stopped replica: a session that began a write transaction as hearth does and then went
    // silent, as a replica whose host died or froze mid-batch does (PostgreSQL sees no socket close).
    const holder = new pg.Client({ connectionString: database.url });
    holder.on('error', () => undefined);
    await holder.connect();
    try {
      await holder.query('begin');
      await holder.query(writeLockSql(SHORT_LIMITS));
      const started = Date.now();
      await within(10_000, 'the other replica’s write committed', writeProject(store, 'after-holder'));
      const waited = Date.now() - started;
      assert.ok(waited >= SHORT_LIMITS.idleInTransactionMs * 0.8, `the write waited for the holder (${waited} ms)`);
      assert.ok(waited < SHORT_LIMITS.writeLockWaitMs, `the write got the lock when PostgreSQL ended the holder’s session (${waited} ms)`);
      // The holder's session is gone, its transaction rolled back: an outage to it, not a bug.
      await assert.rejects(holder.query('select 1'), (error) => isStoreUnavailable(error));
    } finally {
      await holder.end().catch(() => undefined);
      await close();
    }
  },
);

test(
  'a write that cannot get the write lock in time is an outage error (503), and the store writes again once it is free',
  { skip },
  async () => {
    const { database, store, close } = await storeWithShortLimits();
    // A busy holder outside hearth's settings (an operator's session, a replica in a long statement).
    const holder = new pg.Client({ connectionString: database.url });
    holder.on('error', () => undefined);
    await holder.connect();
    let holding = false;
    try {
      await holder.query('begin');
      await holder.query('select pg_advisory_xact_lock($1)', [WRITE_LOCK]);
      holding = true;
      const started = Date.now();
      const failed = await within(
        SHORT_LIMITS.writeLockWaitMs + 5_000,
        'the blocked write was answered',
        writeProject(store, 'blocked').then(
          () => assert.fail('the write committed while another session held the write lock'),
          (error: unknown) => error,
        ),
      );
      const waited = Date.now() - started;
      assert.equal(isStoreUnavailable(failed), true, `an outage error: ${String(failed)}`);
      assert.ok(waited >= SHORT_LIMITS.writeLockWaitMs * 0.8, `it waited for the lock first (${waited} ms)`);
      await holder.query('commit');
      holding = false;
      // Every pooled connection is usable again: none is left waiting on the lock or in a transaction.
      await within(
        5_000,
        'writes after the lock was freed',
        Promise.all(Array.from({ length: 12 }, (_, i) => writeProject(store, `free-${i}`))),
      );
      const rows = await store.reader.selectFrom('projects').select('id').where('id', 'like', 'free-%').execute();
      assert.equal(rows.length, 12);
      const blocked = await store.reader.selectFrom('projects').select('id').where('id', '=', 'blocked').execute();
      assert.deepEqual(blocked, [], 'the write that got the 503 did not commit');
    } finally {
      if (holding) await holder.query('rollback').catch(() => undefined);
      await holder.end();
      await close();
    }
  },
);

/**
 * A TCP proxy to PostgreSQL whose connections can go silent: bytes stop passing both ways but no
 * side is closed, as when a firewall or NAT drops an idle flow or the network splits. New
 * connections pass as usual.
 */
async function silencingProxy(target: URL): Promise<{ url: string; silenceExisting(): void; close(): Promise<void> }> {
  const pairs = new Set<{ client: Socket; upstream: Socket; silent: boolean }>();
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const pair = { client, upstream, silent: false };
    pairs.add(pair);
    client.on('data', (chunk) => pair.silent || upstream.write(chunk));
    upstream.on('data', (chunk) => pair.silent || client.write(chunk));
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) socket.on('close', drop).on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    silenceExisting() {
      for (const pair of pairs) pair.silent = true;
    },
    async close() {
      for (const pair of pairs) pair.client.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

test(
  'a listening connection that goes silent (never closed, never answering) is replaced, and the replica re-checks and hears commits again',
  { skip },
  async () => {
    const database = await createTestDatabase(cluster!.url);
    const proxy = await silencingProxy(new URL(database.url));
    const heard: string[] = [];
    const logged: string[] = [];
    let resyncs = 0;
    const a = openStore({ dataDir: '/nonexistent', databaseUrl: database.url });
    const b = openStore({
      dataDir: '/nonexistent',
      databaseUrl: proxy.url,
      postgresLimits: SHORT_LIMITS,
      onRemoteCommit: (topics) => heard.push(...topics),
      onResync: () => resyncs++,
      logError: (error) => logged.push(String(error)),
    });
    try {
      await a.migrate();
      await b.migrate();
      await a.write(async ({ publish }) => publish('credential:before'));
      await eventually(() => heard.includes('credential:before'), 2_000, 'B hears A while its connection works');

      proxy.silenceExisting();
      // Lost to B: its listening connection is silent. Only a re-check after a reconnect can make up for it.
      await a.write(async ({ publish }) => publish('credential:while-silent'));
      const ms = await eventually(
        () => resyncs === 1,
        4 * SHORT_LIMITS.feedCheckMs + 3_000,
        'B replaced its silent feed connection and re-checked',
      );
      assert.ok(ms < 4 * SHORT_LIMITS.feedCheckMs + 3_000, `noticed in ${ms} ms`);
      assert.ok(
        logged.some((message) => message.includes(`did not answer within ${SHORT_LIMITS.feedCheckMs} ms`)),
        `says why it reconnected: ${JSON.stringify(logged)}`,
      );

      await a.write(async ({ publish }) => publish('credential:after'));
      await eventually(() => heard.includes('credential:after'), 2_000, 'B hears A’s commits on its new connection');
    } finally {
      await proxy.close();
      await b.close();
      await a.close();
      await database.drop();
    }
  },
);

test(
  'a read that times out behind a lock ends on the server too: timed-out reads leave no backends behind to pile up',
  { skip },
  async () => {
    const { database, store, close } = await storeWithShortLimits();
    // A lock held far longer than the query timeout (an operator's session, a long migration by a
    // newer replica): every read of the table waits on it.
    const holder = new pg.Client({ connectionString: database.url });
    holder.on('error', () => undefined);
    await holder.connect();
    const waiting = async () =>
      (
        await holder.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
        )
      ).rows[0]!.n;
    try {
      await holder.query('begin');
      await holder.query('lock table projects in access exclusive mode');
      const reads = () => store.reader.selectFrom('projects').select('id').execute();
      for (const round of [1, 2]) {
        const failed = await within(
          3 * SHORT_LIMITS.queryTimeoutMs,
          `round ${round} of reads answered`,
          Promise.allSettled(Array.from({ length: 9 }, reads)),
        );
        for (const outcome of failed) {
          assert.equal(outcome.status, 'rejected');
          assert.ok(isStoreUnavailable(outcome.reason), `an outage error (503): ${String(outcome.reason)}`);
        }
        // The pool dropped those connections; their backends must not keep waiting on the lock,
        // or every round opens 9 more, past the 11 per replica that max_connections is sized for.
        let left = await waiting();
        for (let i = 0; left > 0 && i < 30; i++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          left = await waiting();
        }
        assert.equal(left, 0, `round ${round}: backends still waiting on the lock after their reads timed out`);
      }
      await holder.query('rollback');
      await within(SHORT_LIMITS.queryTimeoutMs, 'a read once the lock is free', reads());
    } finally {
      await holder.query('rollback').catch(() => undefined);
      await holder.end();
      await close();
    }
  },
);

test('writes do not queue behind reads: a commit goes through while every read connection is busy', { skip }, async () => {
  const { database, store, close } = await storeWithShortLimits();
  const holder = new pg.Client({ connectionString: database.url });
  let reads: Array<Promise<unknown>> = [];
  try {
    // Far more slow reads than the pool has connections, as when hundreds of event streams or
    // long-polls re-read at once. They wait on a lock this test holds, so none can end until it is
    // released (or their query timeout passes): a write that queued behind them ends after one of them.
    await holder.connect();
    await holder.query('select pg_advisory_lock($1)', [READ_BLOCK]);
    let readsEnded = 0;
    reads = Array.from({ length: 30 }, () =>
      sql`select pg_advisory_xact_lock_shared(${READ_BLOCK})`.execute(store.reader).finally(() => readsEnded++),
    );
    // Every read connection is taken (and waits on the lock) before the write is sent.
    let blocked = 0;
    for (let i = 0; i < 200 && blocked < READ_CONNECTIONS; i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      blocked = (
        await holder.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
        )
      ).rows[0]!.n;
    }
    assert.equal(blocked, READ_CONNECTIONS, 'every read connection waits on the lock');
    await within(SHORT_LIMITS.queryTimeoutMs, 'the write committed', writeProject(store, 'not-starved'));
    assert.equal(readsEnded, 0, 'the write committed while every read still waited: it did not queue behind them');
    await holder.query('select pg_advisory_unlock($1)', [READ_BLOCK]);
    await within(20_000, 'the reads finished', Promise.all(reads));
  } finally {
    await holder.end(); // frees the lock, if a failure left it held
    await Promise.allSettled(reads);
    await close();
  }
});

test('a running store whose database is dropped, or whose role may no longer log in, answers 503s, not 500s', { skip }, async () => {
  const database = await createTestDatabase(cluster!.url);
  const { buildApp } = await import('../app.ts');
  const app = await buildApp({
    dataDir: '/nonexistent',
    databaseUrl: database.url,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
  });
  const role = `hearth_t_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: cluster!.url });
  await admin.connect();
  try {
    const headers = { 'x-auth-token': 'admin-secret' };
    await database.drop(); // terminates every connection: each new one is refused with 3D000
    for (const request of [
      { method: 'POST' as const, url: '/v1/default/servers', headers, payload: { name: 'web-1' } },
      { method: 'GET' as const, url: '/v1/default/servers', headers },
    ]) {
      const reply = await app.inject(request);
      assert.equal(reply.statusCode, 503, `${request.method} ${request.url}: ${reply.body}`);
      assert.equal(reply.json<{ error: { code: string } }>().error.code, 'ERR_STORE_UNAVAILABLE');
    }

    // A role that may no longer log in (28000), as after a credential rotation went wrong.
    await admin.query(`create role ${role} login`);
    const byRole = await createTestDatabase(cluster!.url);
    await admin.query(`alter database "${new URL(byRole.url).pathname.slice(1)}" owner to ${role}`);
    const url = new URL(byRole.url);
    url.username = role;
    const store = openStore({ dataDir: '/nonexistent', databaseUrl: url.toString() });
    try {
      await store.migrate();
      await admin.query(`alter role ${role} nologin`);
      await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where usename = $1`, [role]);
      await assert.rejects(writeProject(store, 'refused'), (error) => isStoreUnavailable(error));
      await assert.rejects(store.reader.selectFrom('projects').selectAll().execute(), (error) => isStoreUnavailable(error));
    } finally {
      await store.close();
      await byRole.drop();
    }
  } finally {
    await admin.query(`drop role if exists ${role}`).catch(() => undefined);
    await admin.end();
    await app.close();
  }
});

test(
  'a database that turned read-only (a standby after a switchover) answers writes 503, not 500, and nothing is stored',
  { skip },
  async () => {
    const database = await createTestDatabase(cluster!.url);
    const { buildApp } = await import('../app.ts');
    const app = await buildApp({
      dataDir: '/nonexistent',
      databaseUrl: database.url,
      adminToken: 'admin-secret',
      secretKey: 'unit-test-secret-key-0123456789',
      publicUrl: 'http://127.0.0.1:9',
    });
    const admin = new pg.Client({ connectionString: cluster!.url });
    await admin.connect();
    const name = new URL(database.url).pathname.slice(1);
    // New sessions take the database's default: ending hearth's makes every one of its next connections read-only.
    const reconnectAll = () =>
      admin.query("select pg_terminate_backend(pid) from pg_stat_activity where application_name like 'hearth-server%' and datname = $1", [
        name,
      ]);
    const headers = { 'x-auth-token': 'admin-secret' };
    const register = (serverName: string) =>
      app.inject({ method: 'POST', url: '/v1/default/servers', headers, payload: { name: serverName } });
    try {
      await admin.query(`alter database "${name}" set default_transaction_read_only = on`);
      await reconnectAll();
      for (const serverName of ['read-only-1', 'read-only-2']) {
        const reply = await register(serverName);
        assert.equal(reply.statusCode, 503, `a write to a read-only database: ${reply.body}`);
        assert.equal(reply.json<{ error: { code: string } }>().error.code, 'ERR_STORE_UNAVAILABLE');
      }
      await admin.query(`alter database "${name}" reset default_transaction_read_only`);
      await reconnectAll();
      // Writable again: the connections that met the read-only database were dropped, not lent again.
      const reply = await register('writable');
      assert.equal(reply.statusCode, 201, reply.body);
      const listed = await app.inject({ method: 'GET', url: '/v1/default/servers', headers });
      assert.deepEqual(
        listed.json<{ servers: Array<{ name: string }> }>().servers.map((server) => server.name),
        ['writable'],
        'nothing answered 503 was stored',
      );
    } finally {
      await admin.query(`alter database "${name}" reset default_transaction_read_only`).catch(() => undefined);
      await admin.end();
      await app.close();
      await database.drop();
    }
  },
);

test(
  'a connection that stops answering is dropped after its query times out, and the next writes and reads use a fresh one',
  { skip },
  async () => {
    const database = await createTestDatabase(cluster!.url);
    const proxy = await silencingProxy(new URL(database.url));
    const store = openStore({ dataDir: '/nonexistent', databaseUrl: proxy.url, postgresLimits: SHORT_LIMITS });
    try {
      await store.migrate();
      await writeProject(store, 'before');
      proxy.silenceExisting(); // the write connection and the idle read connections go silent
      const timeout = SHORT_LIMITS.queryTimeoutMs;
      await within(
        3 * timeout,
        'the write on the silent connection failed',
        assert.rejects(writeProject(store, 'lost'), isStoreUnavailable),
      );
      await within(timeout, 'the next write, on a fresh connection', writeProject(store, 'after'));
      // Reads: each silent idle connection fails one query at most, then is replaced.
      const reads = () => store.reader.selectFrom('projects').select('id').execute();
      await within(3 * timeout, 'the reads on the silent connections', Promise.allSettled(Array.from({ length: 9 }, reads)));
      const rows = await within(timeout, 'a read on a fresh connection', reads());
      assert.ok(rows.some((row) => row.id === 'after'));
    } finally {
      await proxy.close();
      await store.close();
      await database.drop();
    }
  },
);

test('a restart that closes every idle connection is one log line without a stack, not one stack per connection', { skip }, async () => {
  const database = await createTestDatabase(cluster!.url);
  const logged: unknown[] = [];
  const store = openStore({ dataDir: '/nonexistent', databaseUrl: database.url, logError: (error) => logged.push(error) });
  const admin = new pg.Client({ connectionString: cluster!.url });
  await admin.connect();
  try {
    await store.migrate();
    // Several idle read connections, and the write connection.
    await Promise.all(Array.from({ length: 6 }, () => store.reader.selectFrom('projects').select('id').execute()));
    await writeProject(store, 'before');
    const dbName = new URL(database.url).pathname.slice(1);
    const killed = await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'hearth-server' and query not ilike 'listen%'`,
      [dbName],
    );
    assert.ok(killed.rowCount! >= 3, `killed ${killed.rowCount} connections`);
    const reported = () => logged.filter((error) => !(error instanceof TaskNotice) || error.fields.task === 'postgres connections');
    await eventually(() => reported().length > 0, 10_000, 'the lost connections were reported');
    // The losses arrive together (one restart): room for a line per connection to show up.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const lines = reported();
    assert.equal(lines.length, 1, `one line for ${killed.rowCount} lost connections: ${lines.map(String).join(' | ')}`);
    const [line] = lines as TaskNotice[];
    assert.ok(line instanceof TaskNotice);
    assert.equal(line.fields.code, '57P01');
    assert.equal(line.fields.err, undefined, 'no stack');
    // And the store goes on, on new connections.
    await writeProject(store, 'after');
    const rows = await store.reader.selectFrom('projects').select('id').execute();
    assert.ok(rows.some((row) => row.id === 'after'));
  } finally {
    await admin.end();
    await store.close();
    await database.drop();
  }
});

test('idleConnectionLossReporter: outage errors make one line per window; other errors pass through', () => {
  const logged: unknown[] = [];
  const report = idleConnectionLossReporter((error) => logged.push(error), 60_000);
  const lost = Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
  for (let i = 0; i < 5; i++) report(lost);
  const other = new Error('something else');
  report(other);
  assert.equal(logged.length, 2);
  assert.ok(logged[0] instanceof TaskNotice);
  assert.deepEqual(logged[0].fields.lost, 1);
  assert.equal(logged[1], other);
});
