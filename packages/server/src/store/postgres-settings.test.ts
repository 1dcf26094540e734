// hearth-server on a PostgreSQL a DBA set up: settings on the database (ALTER DATABASE ... SET) or in
// the URL that hearth did not choose. Each either works or stops the start with the setting named.
// Runs on HEARTH_TEST_POSTGRES_URL (a superuser URL: npx tsx scripts/postgres.ts start FILE prints one).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely, type Migration } from 'kysely';
import pg from 'pg';
import { migrations, type DialectName } from './migrations.ts';
import { openStore, type StoreOptions } from './store.ts';
import { createTestDatabase, postgresTestPass, type TestDatabase } from './test-database.ts';

const adminUrl = process.env.HEARTH_TEST_POSTGRES_URL;
// Each test makes databases of its own, so one pass is enough: the SQLite one, which has the URL too.
const skip = !adminUrl
  ? 'needs HEARTH_TEST_POSTGRES_URL (npx tsx scripts/postgres.ts start FILE)'
  : postgresTestPass() && 'runs in the first pass';

const databases: TestDatabase[] = [];
after(async () => {
  for (const database of databases) await database.drop();
});

/** Runs statements on `url` (default the admin URL), one after the other. */
async function admin(statements: string[], url = adminUrl!): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    for (const statement of statements) await client.query(statement);
  } finally {
    await client.end();
  }
}

/** A fresh database, with `settings` set on it (ALTER DATABASE ... SET name = value) and `create` options. */
async function databaseWith(settings: Record<string, string>, create: { encoding?: string } = {}): Promise<{ url: string; name: string }> {
  let database: TestDatabase;
  if (create.encoding) {
    const name = `hearth_t_enc_${Math.random().toString(16).slice(2)}`;
    await admin([`create database ${name} template template0 encoding '${create.encoding}' lc_collate 'C' lc_ctype 'C'`]);
    const url = new URL(adminUrl!);
    url.pathname = `/${name}`;
    database = { url: url.toString(), drop: () => admin([`drop database if exists ${name} with (force)`]) };
  } else {
    database = await createTestDatabase(adminUrl!);
  }
  databases.push(database);
  const name = new URL(database.url).pathname.slice(1);
  await admin(Object.entries(settings).map(([setting, value]) => `alter database ${name} set ${setting} = '${value}'`));
  return { url: database.url, name };
}

/** Settles with `promise`'s error, or fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  return promise.then(
    () => assert.fail('it succeeded'),
    (error: unknown) => error as Error & { code?: string },
  );
}

/** The schemas that hold a table of `name` in the database at `url`. */
async function schemasWith(url: string, name: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ nspname: string }>(
      `select n.nspname from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relname = $1 order by 1`,
      [name],
    );
    return rows.map((row) => row.nspname);
  } finally {
    await client.end();
  }
}

test(
  'a DBA’s idle_session_timeout does not end the connections hearth keeps: no reconnects, no errors, reads and writes go on',
  { skip, timeout: 60_000 },
  async () => {
    const { url } = await databaseWith({ idle_session_timeout: '300ms' });
    const errors: unknown[] = [];
    let resyncs = 0;
    const store = openStore({
      dataDir: '/nonexistent',
      databaseUrl: url,
      logError: (error) => errors.push(error),
      onResync: () => resyncs++,
    });
    try {
      await store.migrate();
      await store.write(({ trx }) =>
        trx.insertInto('projects').values({ id: 'p1', name: 'p1', created_at: '2026-01-01T00:00:00Z' }).execute(),
      );
      await store.reader.selectFrom('projects').selectAll().execute();
      // Every connection (the feed's, the write one, the read pool's) now sits idle well past the timeout.
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await store.write(({ trx }) =>
        trx.insertInto('projects').values({ id: 'p2', name: 'p2', created_at: '2026-01-01T00:00:00Z' }).execute(),
      );
      const rows = await store.reader.selectFrom('projects').select('id').orderBy('id').execute();
      assert.deepEqual(
        rows.map((row) => row.id),
        ['p1', 'p2'],
      );
      assert.equal(resyncs, 0, 'the change feed kept its connection');
      assert.deepEqual(errors.map(String), [], 'no connection was lost');
    } finally {
      await store.close();
    }
  },
);

test(
  'migrations run without the DBA’s statement_timeout, lock_timeout and idle_in_transaction_session_timeout',
  { skip, timeout: 60_000 },
  async () => {
    const { url } = await databaseWith({ statement_timeout: '100ms', lock_timeout: '100ms', idle_in_transaction_session_timeout: '100ms' });
    const slow: Migration = {
      // Kysely's migration API takes Kysely<any>.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      async up(db: Kysely<any>) {
        await sql`select pg_sleep(0.4)`.execute(db); // a table rewrite or an index build on a large table
        await new Promise((resolve) => setTimeout(resolve, 400)); // idle inside the migration's transaction
        await sql`select 1`.execute(db);
      },
    };
    const chosen: StoreOptions['migrations'] = (dialect: DialectName) => ({ ...migrations(dialect), '0099_slow': slow });
    const store = openStore({ dataDir: '/nonexistent', databaseUrl: url, migrations: chosen });
    try {
      const applied = await store.migrate();
      assert.equal(applied.at(-1), '0099_slow');
      // Requests keep hearth's own bound, not none.
      const { rows } = await sql<{ statement_timeout: string }>`show statement_timeout`.execute(store.reader);
      assert.equal(rows[0]?.statement_timeout, '30s');
    } finally {
      await store.close();
    }
  },
);

test('a database that is not UTF8 is refused before anything is created, naming its encoding', { skip, timeout: 60_000 }, async () => {
  const { url } = await databaseWith({}, { encoding: 'LATIN1' });
  const store = openStore({ dataDir: '/nonexistent', databaseUrl: url });
  try {
    const error = await rejection(store.migrate());
    assert.equal(error.code, 'ERR_DATABASE_SETUP');
    assert.match(error.message, /has encoding LATIN1, .* give hearth a UTF8 database/);
    assert.deepEqual(await schemasWith(url, 'kysely_migration'), [], 'nothing was created');
  } finally {
    await store.close();
  }
});

test(
  'a search_path naming no schema, or another schema than hearth’s tables are in, is refused, naming it',
  { skip, timeout: 90_000 },
  async () => {
    const { url: nowhere } = await databaseWith({ search_path: 'no_such_schema' });
    let store = openStore({ dataDir: '/nonexistent', databaseUrl: nowhere });
    try {
      const error = await rejection(store.migrate());
      assert.equal(error.code, 'ERR_DATABASE_SETUP');
      assert.match(error.message, /search_path \(no_such_schema\) names no schema that exists/);
    } finally {
      await store.close();
    }

    // hearth migrated into schema hearth (its role's search_path), then a replica whose URL says public.
    const { url, name } = await databaseWith({});
    await admin(['create schema hearth'], url);
    await admin([`alter database ${name} set search_path = hearth`]);
    store = openStore({ dataDir: '/nonexistent', databaseUrl: url });
    try {
      await store.migrate();
    } finally {
      await store.close();
    }
    const elsewhere = new URL(url);
    elsewhere.searchParams.set('options', '-c search_path=public');
    store = openStore({ dataDir: '/nonexistent', databaseUrl: elsewhere.toString() });
    try {
      const error = await rejection(store.migrate());
      assert.equal(error.code, 'ERR_DATABASE_SETUP');
      assert.match(error.message, /hearth's tables are in schema hearth .* search_path \(public\) makes this connection use schema public/);
      assert.deepEqual(await schemasWith(url, 'servers'), ['hearth'], 'no second set of tables was made in public');
    } finally {
      await store.close();
    }
  },
);
