// Lists ordered by name come back in the same order from PostgreSQL as from SQLite (byte order),
// whatever collation the PostgreSQL database was created with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.ts';
import { ADMIN, testStore, type TestStore } from '../test-support.ts';
import { createTestDatabase, postgresTestPass, type TestDatabase } from './test-database.ts';

/** Names whose byte order differs from en_US order (case, `-`, `_` and `.` count). */
const NAMES = ['web-2', 'Web_1', 'db', 'app.x', 'web1'];
const BYTE_ORDER = [...NAMES].sort(); // JS compares UTF-16 code units: byte order for these ASCII names

async function stackNames(app: FastifyInstance, query = ''): Promise<string[]> {
  const reply = await app.inject({ url: `/v1/default/stacks${query}`, headers: ADMIN });
  assert.equal(reply.statusCode, 200, reply.body);
  return reply.json<{ stacks: Array<{ stack_name: string }> }>().stacks.map((stack) => stack.stack_name);
}

/** The store of this pass: SQLite, or a PostgreSQL database created with the en_US.utf8 locale (undefined if the host lacks it). */
async function storage(): Promise<{ store: TestStore; database?: TestDatabase } | undefined> {
  const store = await testStore('hearth-collation-');
  if (!postgresTestPass()) return { store };
  let database: TestDatabase;
  try {
    database = await createTestDatabase(process.env.HEARTH_TEST_POSTGRES_URL!, { locale: 'en_US.utf8' });
  } catch (error) {
    await store.remove();
    if (/invalid locale name/.test((error as Error).message)) return undefined;
    throw error;
  }
  return { store: { ...store, databaseUrl: database.url }, database };
}

test('stacks list in byte order, and a page after a marker holds the same stacks, on every store and collation', async (t) => {
  const chosen = await storage();
  if (!chosen) return t.skip('the PostgreSQL host has no en_US.utf8 locale');
  t.after(async () => {
    await chosen.store.remove();
    await chosen.database?.drop();
  });
  const app = await buildApp({
    dataDir: chosen.store.dataDir,
    databaseUrl: chosen.store.databaseUrl,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
  });
  try {
    for (const name of NAMES) {
      const reply = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: name } });
      assert.equal(reply.statusCode, 201, reply.body);
    }
    assert.deepEqual(await stackNames(app), BYTE_ORDER);
    assert.deepEqual(await stackNames(app, '?limit=2&marker=db'), BYTE_ORDER.slice(BYTE_ORDER.indexOf('db') + 1).slice(0, 2));
  } finally {
    await app.close();
  }
});
