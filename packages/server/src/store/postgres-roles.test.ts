// hearth-server as the roles a DBA hands out: migrations run by the tables' owner, serve by a role
// with only SELECT, INSERT, UPDATE, DELETE (and sequence USAGE), a role that may not create tables,
// a connection limit, a read-only database. Each works, or stops the start (exit 69) saying what to
// grant or change, never with a stack or the URL's password.
// Runs on HEARTH_TEST_POSTGRES_URL (a superuser URL: npx tsx scripts/postgres.ts start FILE prints one).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { buildApp } from '../app.ts';
import { ADMIN } from '../test-support.ts';
import { openStore } from './store.ts';
import { postgresTestPass } from './test-database.ts';

const adminUrl = process.env.HEARTH_TEST_POSTGRES_URL;
// Each test makes databases and roles of its own, so one pass is enough: the SQLite one, which has the URL too.
const skip = !adminUrl
  ? 'needs HEARTH_TEST_POSTGRES_URL (npx tsx scripts/postgres.ts start FILE)'
  : postgresTestPass() && 'runs in the first pass';
/** Put in every URL: the test cluster trusts loopback, so it connects, and it must never be printed. */
const PASSWORD = 'p@ss:w/o%rd#never-logged';

const cleanup: string[] = [];
after(async () => {
  // Databases before the roles that own them or hold privileges in them.
  for (const statement of cleanup.reverse()) await admin([statement]).catch(() => undefined);
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

/** A new login role (`attributes` e.g. CONNECTION LIMIT 2), dropped after the tests. */
async function role(attributes = ''): Promise<string> {
  const name = `hearth_t_role_${randomBytes(6).toString('hex')}`;
  await admin([`create role ${name} login ${attributes}`]);
  cleanup.push(`drop role if exists ${name}`);
  return name;
}

/** A new database owned by `owner`, dropped after the tests. */
async function database(owner: string): Promise<string> {
  const name = `hearth_t_${randomBytes(8).toString('hex')}`;
  await admin([`create database ${name} owner ${owner}`]);
  cleanup.push(`drop database if exists ${name} with (force)`);
  return name;
}

/** The URL of `name` as `user`, with PASSWORD in it. */
function urlOf(name: string, user: string): string {
  const url = new URL(adminUrl!);
  url.username = user;
  url.password = encodeURIComponent(PASSWORD);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Settles with `promise`'s error, or fails the test if it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  return promise.then(
    () => assert.fail('it succeeded'),
    (error: unknown) => error as Error & { code?: string },
  );
}

/** Runs `hearth-server ARGS`; resolves with its exit code and output, killing it after 60 s. */
function hearthServer(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-roles-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/server/src/bin.ts', ...args, '--data-dir', dataDir], {
    cwd: new URL('../../../..', import.meta.url).pathname,
    env: { ...process.env, HEARTH_ADMIN_TOKEN: 'roles-test-admin-token-0123456789', HEARTH_SECRET_KEY: 'roles-test-secret-key-0123456789' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      rmSync(dataDir, { recursive: true, force: true });
      resolve({ code, stdout, stderr });
    }),
  );
}

/** What every start-up failure must be: exit 69, one line, no stack, no password. */
function assertCleanRefusal(run: { code: number | null; stdout: string; stderr: string }): void {
  assert.equal(run.code, 69, run.stderr);
  assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
  assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack');
  for (const form of [PASSWORD, encodeURIComponent(PASSWORD)]) {
    assert.ok(!(run.stdout + run.stderr).includes(form), 'the password is not printed');
  }
}

test(
  'serve works as a role with only SELECT, INSERT, UPDATE, DELETE and sequence USAGE, and names what a role lacks',
  { skip, timeout: 90_000 },
  async () => {
    const owner = await role();
    const server = await role();
    const name = await database(owner);
    const migrator = openStore({ dataDir: '/nonexistent', databaseUrl: urlOf(name, owner) });
    try {
      await migrator.migrate();
    } finally {
      await migrator.close();
    }
    await admin(
      [
        `grant select, insert, update, delete on all tables in schema public to ${server}`,
        `grant usage on all sequences in schema public to ${server}`,
      ],
      urlOf(name, owner),
    );

    const dataDir = mkdtempSync(join(tmpdir(), 'hearth-roles-'));
    const app = await buildApp({
      dataDir,
      databaseUrl: urlOf(name, server),
      adminToken: ADMIN['x-auth-token'],
      secretKey: 'roles-test-secret-key-0123456789',
      publicUrl: 'http://127.0.0.1:9',
    });
    try {
      const created = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'vm' } });
      assert.equal(created.statusCode, 201, created.body);
      const listed = await app.inject({ url: '/v1/default/events', headers: ADMIN });
      assert.equal(listed.statusCode, 200, listed.body);
      assert.ok(
        listed.json<{ events: Array<{ type: string }> }>().events.some((event) => event.type === 'server.created'),
        listed.body,
      );
    } finally {
      await app.close();
      rmSync(dataDir, { recursive: true, force: true });
    }

    // A privilege missing on one table, and a sequence's USAGE: refused at start, each named, not a 500 later.
    await admin([`revoke delete on servers from ${server}`, `revoke usage on sequence events_id_seq from ${server}`], urlOf(name, owner));
    const store = openStore({ dataDir: '/nonexistent', databaseUrl: urlOf(name, server) });
    try {
      const error = await rejection(store.migrate());
      assert.equal(error.code, 'ERR_DATABASE_SETUP');
      assert.match(
        error.message,
        new RegExp(
          `the database user ${server} lacks privileges hearth-server needs: USAGE on sequence events_id_seq; DELETE on table servers\\.`,
        ),
      );
      assert.match(error.message, /GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public/);
    } finally {
      await store.close();
    }
  },
);

test('a connection limit under the 3 connections a replica needs is refused at start, naming it', { skip, timeout: 60_000 }, async () => {
  const limited = await role('connection limit 2');
  const name = await database(limited);
  const store = openStore({ dataDir: '/nonexistent', databaseUrl: urlOf(name, limited) });
  try {
    const error = await rejection(store.migrate());
    assert.equal(error.code, 'ERR_DATABASE_SETUP');
    assert.match(
      error.message,
      new RegExp(`role ${limited} may open at most 2 connections \\(ALTER ROLE ${limited} CONNECTION LIMIT\\), .* at least 3`),
    );
  } finally {
    await store.close();
  }
});

test(
  'hearth-server as a role that may not create tables, on an empty database: exit 69 saying what to grant, no stack',
  { skip, timeout: 90_000 },
  async () => {
    const owner = await role();
    const server = await role();
    const name = await database(owner);
    const run = await hearthServer(['migrate', '--database-url', urlOf(name, server)]);
    assertCleanRefusal(run);
    assert.match(
      run.stderr,
      /lacks a privilege hearth-server needs \(.*permission denied for schema public.*\): run hearth-server migrate as a user that may create tables/,
    );
  },
);

test(
  'hearth-server serve on a database that takes no writes: exit 69 naming default_transaction_read_only',
  { skip, timeout: 120_000 },
  async () => {
    const owner = await role();
    const name = await database(owner);
    const migrator = openStore({ dataDir: '/nonexistent', databaseUrl: urlOf(name, owner) });
    try {
      await migrator.migrate();
    } finally {
      await migrator.close();
    }
    await admin([`alter database ${name} set default_transaction_read_only = on`]);
    const run = await hearthServer([
      'serve',
      '--listen',
      '127.0.0.1:0',
      '--public-url',
      'http://127.0.0.1:9',
      '--database-url',
      urlOf(name, owner),
    ]);
    assertCleanRefusal(run);
    assert.match(run.stderr, /takes no writes \(.*read-only transaction\): it is a standby, or default_transaction_read_only is on/);
  },
);
