import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import pg from 'pg';
import { createTestDatabase, testDatabaseUrl } from '../../packages/server/src/store/test-database.ts';
import { freePort } from './server.ts';
import { skipUnlessPostgres, startPostgres } from './postgres.ts';

const skip = skipUnlessPostgres();

/** Runs `statement` on a fresh connection to `url` and returns the rows. */
async function query<Row>(url: string, statement: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return (await client.query(statement)).rows as Row[];
  } finally {
    await client.end();
  }
}

test('a throwaway cluster: connect, restart and kill keep the data, stop removes everything', { skip, timeout: 120_000 }, async () => {
  const cluster = await startPostgres({ settings: { work_mem: '8MB' } });
  try {
    assert.match(cluster.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    assert.ok(cluster.url.endsWith(`:${cluster.port}/postgres`));
    assert.deepEqual(await query(cluster.url, 'select 1 as one'), [{ one: 1 }]);
    const settings = () =>
      query<{ listen: string; fsync: string; work_mem: string }>(
        cluster.url,
        "select current_setting('listen_addresses') as listen, current_setting('fsync') as fsync, current_setting('work_mem') as work_mem",
      );
    assert.deepEqual(await settings(), [{ listen: '127.0.0.1', fsync: 'off', work_mem: '8MB' }], 'test defaults and the extra setting');

    await query(cluster.url, "create table kept (v text); insert into kept values ('before restart')");
    await cluster.restart();
    assert.deepEqual(await query(cluster.url, 'select v from kept'), [{ v: 'before restart' }]);
    assert.deepEqual(await settings(), [{ listen: '127.0.0.1', fsync: 'off', work_mem: '8MB' }], 'the same settings after a restart');

    await cluster.kill();
    await assert.rejects(query(cluster.url, 'select 1'), /ECONNREFUSED/);
    assert.ok(existsSync(cluster.dir), 'kill keeps the data');
    await cluster.start();
    assert.deepEqual(await query(cluster.url, 'select v from kept'), [{ v: 'before restart' }]);
  } finally {
    await cluster.stop();
  }
  assert.equal(existsSync(cluster.dir), false, 'stop removes the temp dir');
  await cluster.stop(); // a second stop is harmless
});

test('a cluster that cannot start says why, with the server log', { skip, timeout: 120_000 }, async () => {
  const port = await freePort();
  const squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(port, '127.0.0.1', resolve));
  try {
    await assert.rejects(startPostgres({ port }), (error: Error) => {
      assert.match(error.message, new RegExp(`did not start on 127\\.0\\.0\\.1:${port}`));
      assert.match(error.message, /could not bind|could not create any TCP\/IP sockets/);
      return true;
    });
  } finally {
    await new Promise((resolve) => squatter.close(resolve));
  }
  await assert.rejects(
    startPostgres({ settings: { work_mem: '8 MB' } }),
    /setting work_mem=8 MB: use a plain name and a value without spaces/,
  );
});

test('createTestDatabase creates a database of its own and drops it, even with a connection open', { skip, timeout: 120_000 }, async () => {
  const cluster = await startPostgres();
  try {
    const databases = async () =>
      (await query<{ datname: string }>(cluster.url, 'select datname from pg_database')).map((row) => row.datname);
    const [a, b] = await Promise.all([createTestDatabase(cluster.url), createTestDatabase(cluster.url)]);
    assert.notEqual(a.url, b.url);
    const name = new URL(a.url).pathname.slice(1);
    assert.match(name, /^hearth_t_[0-9a-f]{16}$/);
    assert.ok((await databases()).includes(name));
    assert.deepEqual(await query(a.url, 'select current_database() as name'), [{ name }]);

    const held = new pg.Client({ connectionString: a.url });
    held.on('error', () => undefined); // the drop terminates it
    await held.connect();
    await a.drop();
    await held.end().catch(() => undefined);
    assert.equal((await databases()).includes(name), false);
    await a.drop(); // already gone: fine
    await b.drop();
  } finally {
    await cluster.stop();
  }
});

test('testDatabaseUrl: nothing outside the PostgreSQL pass; in it, a clear error without HEARTH_TEST_POSTGRES_URL', async () => {
  const saved = { store: process.env.HEARTH_TEST_STORE, url: process.env.HEARTH_TEST_POSTGRES_URL };
  try {
    delete process.env.HEARTH_TEST_STORE;
    assert.equal(await testDatabaseUrl(), undefined);
    process.env.HEARTH_TEST_STORE = 'postgres';
    delete process.env.HEARTH_TEST_POSTGRES_URL;
    await assert.rejects(testDatabaseUrl(), /HEARTH_TEST_STORE=postgres needs HEARTH_TEST_POSTGRES_URL/);
  } finally {
    for (const [key, value] of [
      ['HEARTH_TEST_STORE', saved.store],
      ['HEARTH_TEST_POSTGRES_URL', saved.url],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
});
