// What hearth-server logs when PostgreSQL fails under it: which failure it was, never what the
// failing connection or row held. node-postgres hands a pool error over with the whole client
// attached (connection parameters, the backend's cancel key), and PostgreSQL quotes a refused row
// in the error's `detail`; both used to reach the log as they were.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { buildApp } from '../../packages/server/src/app.ts';
import { createTestDatabase, postgresTestPass, type TestDatabase } from '../../packages/server/src/store/test-database.ts';
import { skipUnlessPostgres, startPostgres, type PostgresCluster } from '../helpers/postgres.ts';
import { databaseName, query, until } from './replica-support.ts';

// This file starts its own cluster, so the suite's PostgreSQL pass (HEARTH_TEST_STORE=postgres) need not run it again.
const skip = skipUnlessPostgres() || (postgresTestPass() && 'runs in the first pass, on a cluster of its own');
const ADMIN = { 'x-auth-token': 'log-test-admin-token-0123456789' };
/** In the database URL only: the throwaway cluster trusts loopback, so any password connects, and none may be logged. */
const DATABASE_PASSWORD = 'pg-password-never-logged';

let cluster: PostgresCluster | undefined;
before(async () => {
  if (!skip) cluster = await startPostgres();
});
after(async () => {
  await cluster?.stop();
});

/** An app on a fresh database of the cluster, its log lines parsed as they come; closed and dropped by `done`. */
async function loggedApp() {
  const database: TestDatabase = await createTestDatabase(cluster!.url);
  const url = new URL(database.url);
  url.password = DATABASE_PASSWORD;
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-log-secrets-'));
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  const app = await buildApp({
    dataDir,
    databaseUrl: url.toString(),
    adminToken: ADMIN['x-auth-token'],
    secretKey: 'log-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
    logger: { level: 'trace', stream },
  });
  return {
    app,
    database,
    lines,
    done: async () => {
      try {
        await app.close();
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
        await database.drop();
      }
    },
  };
}

test(
  'pool connections PostgreSQL ends are logged once, by their SQLSTATE, without the client node-postgres attaches',
  { skip, timeout: 60_000 },
  async () => {
    const { app, database, lines, done } = await loggedApp();
    try {
      // Some requests leave idle connections in the pool (kept 10 s).
      for (let i = 0; i < 3; i++) {
        const reply = await app.inject({ method: 'GET', url: '/v1/default/servers', headers: ADMIN });
        assert.equal(reply.statusCode, 200, reply.body);
      }
      // Not the feed's listening connection (application_name 'hearth-server feed'): the pool's idle ones.
      await query(
        cluster!.url,
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and application_name = 'hearth-server'",
        [databaseName(database.url)],
      );
      const line = await until('the lost connections are logged', 20_000, async () =>
        lines.find((candidate) => candidate.includes('PostgreSQL closed idle connections') && candidate.includes('57P01')),
      );
      const logged = JSON.parse(line) as Record<string, unknown>;
      assert.equal(logged.code, '57P01', line);
      assert.match(String(logged.message), /terminating connection/);
      assert.equal(logged.err, undefined, `an error object (and the pg client in it) was logged: ${line.slice(0, 500)}`);
      assert.equal(
        lines.filter((candidate) => candidate.includes('PostgreSQL closed idle connections')).length,
        1,
        'one line, not one per connection',
      );
      for (const text of lines) {
        assert.ok(
          !text.includes('secretKey') && !text.includes('connectionParameters'),
          `connection state in the log: ${text.slice(0, 500)}`,
        );
        assert.ok(!text.includes(DATABASE_PASSWORD), `the database password in the log: ${text.slice(0, 500)}`);
      }
    } finally {
      await done();
    }
  },
);

test('a row PostgreSQL refuses is not quoted in the log of the 500 it causes', { skip, timeout: 60_000 }, async () => {
  const { app, database, lines, done } = await loggedApp();
  try {
    // A constraint hearth does not know about (an operator's, or a migration gone wrong): its violation
    // is a 500, and PostgreSQL's detail reads "Failing row contains (...)", the config body included.
    await query(database.url, "alter table software_configs add constraint no_plain_passwords check (position('PASSWORD=' in config) = 0)");
    const secret = 'hunter2-in-a-config-body';
    const reply = await app.inject({
      method: 'POST',
      url: '/v1/default/software_configs',
      headers: ADMIN,
      payload: { name: 'db', group: 'script', config: `#!/bin/sh\nexport PASSWORD=${secret}\n` },
    });
    assert.equal(reply.statusCode, 500, reply.body);
    assert.equal(reply.json<{ error: { code: string } }>().error.code, 'ERR_INTERNAL');
    assert.ok(!reply.body.includes(secret), reply.body);
    await new Promise((resolve) => setImmediate(resolve));
    const line = lines.find((candidate) => candidate.includes('"request failed"'));
    assert.ok(line, `the 500 was logged: ${lines.join('\n').slice(-2000)}`);
    const logged = JSON.parse(line) as { err: Record<string, unknown> };
    assert.equal(logged.err.code, '23514', line);
    assert.equal(logged.err.constraint, 'no_plain_passwords', 'what names the failure stays');
    for (const text of lines) assert.ok(!text.includes(secret), `the refused row in the log: ${text.slice(0, 800)}`);
  } finally {
    await done();
  }
});
