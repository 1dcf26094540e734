// How a migration run behaves when a migration is slow or fails, on the test pass's dialect.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely, type Migration } from 'kysely';
import { TEST_DIALECT, testStore } from '../test-support.ts';
import { migrations, type DialectName } from './migrations.ts';
import { POSTGRES_LIMITS } from './postgres.ts';
import { openStore, type MigrationProgress, type StoreOptions } from './store.ts';

// Kysely's migration API takes Kysely<any>: the schema is what a migration changes.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

/** hearth's migrations, then `extra`. */
function withExtra(extra: Record<string, Migration>): StoreOptions['migrations'] {
  return (dialect: DialectName) => ({ ...migrations(dialect), ...extra });
}

async function recorded(db: AnyDb): Promise<string[]> {
  const rows = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db);
  return rows.rows.map((row) => row.name);
}

async function columnsOf(db: AnyDb, table: string): Promise<string[]> {
  const tables = await db.introspection.getTables();
  return (tables.find((t) => t.name === table)?.columns ?? []).map((c) => c.name).sort();
}

test('a migration that fails half way leaves the database as it was before the run, and the next run applies it', async (t) => {
  const storage = await testStore('hearth-migrate-fail-');
  t.after(() => storage.remove());
  let fail = true;
  const halfWay: Migration = {
    async up(db: AnyDb) {
      await db.schema.createTable('half_done').addColumn('id', 'integer').execute();
      await db.schema.alterTable('servers').addColumn('half_column', 'text').execute();
      if (fail) throw new Error('the disk is full');
    },
  };
  const failing = openStore({ ...storage, migrations: withExtra({ '0098_half_way': halfWay }) });
  try {
    const error = await failing.migrate().then(
      () => assert.fail('the migration run succeeded'),
      (rejected: unknown) => rejected as Error,
    );
    // Nothing of the run stayed: not the failed migration's table or column, nor the earlier migrations run with it.
    const tables = (await failing.reader.introspection.getTables()).map((table) => table.name);
    assert.ok(!tables.includes('half_done'), `half_done was left behind: ${tables.join(', ')}`);
    assert.ok(!tables.includes('servers'), 'the migrations run with the failed one were rolled back too');
    assert.match(error.message, /^migration 0098_half_way failed: the disk is full\./);
    assert.match(error.message, /the database is as it was before this run/);
  } finally {
    await failing.close();
  }

  fail = false;
  const progress: MigrationProgress[] = [];
  const fixed = openStore({ ...storage, migrations: withExtra({ '0098_half_way': halfWay }), onMigration: (p) => progress.push(p) });
  try {
    const applied = await fixed.migrate();
    assert.deepEqual(applied, [...Object.keys(migrations(TEST_DIALECT)), '0098_half_way']);
    assert.deepEqual(await recorded(fixed.reader), applied);
    assert.ok((await columnsOf(fixed.reader, 'servers')).includes('half_column'));
    assert.deepEqual(
      progress.map((p) => `${p.phase} ${p.name}`),
      applied.flatMap((name) => [`start ${name}`, `done ${name}`]),
      'each migration is reported as it starts and ends',
    );
    for (const p of progress) if (p.phase === 'done') assert.ok(Number.isInteger(p.ms) && p.ms >= 0);
  } finally {
    await fixed.close();
  }
});

test('a migration that runs longer than the query timeout completes (PostgreSQL)', { skip: TEST_DIALECT !== 'postgres' }, async (t) => {
  const storage = await testStore('hearth-migrate-slow-');
  t.after(() => storage.remove());
  // A table rewrite or index build on a large database, as a real slow statement: twice the query timeout.
  const slow: Migration = {
    async up(db: AnyDb) {
      await db.schema.createTable('slow_built').addColumn('id', 'integer').execute();
      await sql`select pg_sleep(2)`.execute(db);
    },
  };
  const store = openStore({
    ...storage,
    postgresLimits: { ...POSTGRES_LIMITS, queryTimeoutMs: 1_000 },
    migrations: withExtra({ '0099_slow': slow }),
  });
  try {
    const applied = await store.migrate();
    assert.equal(applied.at(-1), '0099_slow');
    assert.deepEqual(await columnsOf(store.reader, 'slow_built'), ['id']);
    // The store's own queries keep their timeout: only the migration connection has none.
    // Ended by whichever bound fires first: the client's query_timeout or the server's statement_timeout (the same value).
    await assert.rejects(sql`select pg_sleep(2)`.execute(store.reader), /Query read timeout|canceling statement due to statement timeout/);
  } finally {
    await store.close();
  }
});
