// Spawns real `hearth-server` processes (node --import tsx src/bin.ts): start-up failures an operator meets,
// each a one-line message and an exit code of its own (pinned here: scripts and unit files depend on them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { BIN, hearthServer, withDir } from './bin-test-support.ts';

const KEYS = { HEARTH_ADMIN_TOKEN: 'test-admin-token', HEARTH_SECRET_KEY: 'test-secret-key-0123456789abcdef' };

/** One line on stderr, no stack trace, no secret. */
function assertOneLine(stderr: string, pattern: RegExp): void {
  const lines = stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line on stderr, got:\n${stderr}`);
  assert.match(lines[0]!, pattern);
  assert.doesNotMatch(stderr, /\n\s+at |hunter2/);
}

test(
  'a data dir that is a file: exit 73 saying to pick another',
  withDir(async (dir) => {
    writeFileSync(join(dir, 'file'), '');
    for (const command of ['serve', 'migrate']) {
      const { code, stderr } = await hearthServer([command, '--data-dir', join(dir, 'file')], KEYS);
      assert.equal(code, 73, command);
      assertOneLine(stderr, /^hearth-server: cannot write the data dir .*\/file \(EEXIST.*\): make it a directory .* --data-dir/);
    }
  }),
);

test(
  'a hearth.db that is not SQLite: exit 65 naming the file',
  withDir(async (dir) => {
    writeFileSync(join(dir, 'hearth.db'), 'not a database at all, just some text that is long enough '.repeat(100));
    const { code, stderr } = await hearthServer(['migrate', '--data-dir', dir]);
    assert.equal(code, 65);
    assertOneLine(stderr, /^hearth-server: .*\/hearth\.db is not a usable SQLite database \(file is not a database\): restore it/);
  }),
);

test(
  'a database URL that points at nothing: exit 69, without the password',
  withDir(async (dir) => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve())); // nothing listens there now
    const url = `postgres://hearth:hunter2@127.0.0.1:${port}/hearth?password=hunter2`;
    const { code, stderr } = await hearthServer(
      ['serve', '--listen', '127.0.0.1:0', '--public-url', 'http://127.0.0.1', '--data-dir', dir],
      {
        ...KEYS,
        HEARTH_DATABASE_URL: url,
      },
    );
    assert.equal(code, 69);
    assertOneLine(
      stderr,
      new RegExp(`^hearth-server: cannot use the database postgres://hearth@127.0.0.1:${port}/hearth: .*ECONNREFUSED.*--database-url`),
    );
  }),
);

test(
  'a malformed database URL or a short secret key: exit 64 before anything is touched',
  withDir(async (dir) => {
    const data = join(dir, 'data');
    const badUrl = await hearthServer(['migrate', '--data-dir', data, '--database-url', 'postgres://u:hunter2@[x/db']);
    assert.equal(badUrl.code, 64);
    assertOneLine(badUrl.stderr, /^hearth-server: database URL is not a valid postgres:\/\/ URL/);
    const shortKey = await hearthServer(['serve', '--data-dir', data], { ...KEYS, HEARTH_SECRET_KEY: 'hunter2' });
    assert.equal(shortKey.code, 64);
    assertOneLine(shortKey.stderr, /^hearth-server: HEARTH_SECRET_KEY is 7 characters long: it needs at least 16/);
  }),
);

test(
  'an events retention that is not a whole number of days: exit 64 naming the flag and the variable; serve --help shows it',
  withDir(async (dir) => {
    for (const [args, env] of [
      [['--events-retention-days', '-3'], {}],
      [[], { HEARTH_EVENTS_RETENTION_DAYS: '30d' }],
    ] as const) {
      const { code, stderr } = await hearthServer(
        ['serve', '--listen', '127.0.0.1:0', '--public-url', 'http://127.0.0.1', '--data-dir', dir, ...args],
        {
          ...KEYS,
          ...env,
        },
      );
      assert.equal(code, 64, stderr);
      assertOneLine(
        stderr,
        /^hearth-server: --events-retention-days \(env HEARTH_EVENTS_RETENTION_DAYS\) "(-3|30d)" is not a whole number of days/,
      );
    }
    const help = await hearthServer(['serve', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--events-retention-days <days>\s+days events are kept.*\(env\s+HEARTH_EVENTS_RETENTION_DAYS, default 30\)/s);
  }),
);

test(
  'a certificate file the database URL names and that cannot be read: exit 64 naming it, not the data dir',
  withDir(async (dir) => {
    const data = join(dir, 'data');
    const missing = join(dir, 'no-such-client.crt');
    // Port 1 on loopback: node-postgres reads the certificate before it connects, so nothing is reached.
    const url = `postgres://hearth:pw@127.0.0.1:1/hearth?sslmode=require&sslcert=${encodeURIComponent(missing)}`;
    const { code, stderr } = await hearthServer(['migrate', '--data-dir', data, '--database-url', url]);
    assert.equal(code, 64);
    assertOneLine(stderr, new RegExp(`^hearth-server: cannot read ${missing}, which --database-url .* names \\(ENOENT`));
    assert.doesNotMatch(stderr, /data dir/);
  }),
);

test(
  'a listen address in use: exit 75; an empty secret-key file: exit 65, left as it was',
  withDir(async (dir) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const { code, stderr } = await hearthServer(['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dir], KEYS);
      assert.equal(code, 75);
      assertOneLine(stderr, new RegExp(`^hearth-server: 127.0.0.1:${port} is in use by another process: pick another with --listen`));
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
    }
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o700 });
    writeFileSync(join(data, 'secret-key'), '', { mode: 0o600 });
    const empty = await hearthServer(['serve', '--data-dir', data], { HEARTH_ADMIN_TOKEN: KEYS.HEARTH_ADMIN_TOKEN });
    assert.equal(empty.code, 65);
    assertOneLine(empty.stderr, /^hearth-server: .*\/secret-key is empty: restore it, or delete it to generate a new one/);
    assert.equal(readFileSync(join(data, 'secret-key'), 'utf8'), '', 'the secret key file is not replaced');
  }),
);

test(
  'the database is made readable by its owner only, even in a data dir others can list; an older one others can read is warned about',
  withDir(async (dir) => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    chmodSync(data, 0o755); // as systemd's StateDirectory= or `install -d` leaves it
    const fresh = await hearthServer(['migrate', '--data-dir', data]);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.equal(statSync(join(data, 'hearth.db')).mode & 0o777, 0o600);
    assert.equal(fresh.stderr, '');

    chmodSync(join(data, 'hearth.db'), 0o644);
    const older = await hearthServer(['migrate', '--data-dir', data]);
    assert.equal(older.code, 0, older.stderr);
    assertOneLine(older.stderr, /^hearth-server: warning: .*\/hearth\.db can be read by other users \(mode 0644\) .*: chmod 600 /);
    assert.equal(statSync(join(data, 'hearth.db')).mode & 0o777, 0o644, 'the warning changes nothing');
  }),
);

test(
  'a database migrated by a newer hearth-server: exit 65 saying so, and nothing changed',
  withDir(async (dir) => {
    const first = await hearthServer(['migrate', '--data-dir', dir]);
    assert.equal(first.code, 0, first.stderr);
    // Each migration is shown as it starts and ends, then the summary.
    assert.match(first.stdout, /^applying 0001_\S+ \.\.\.\napplied 0001_\S+ \(\d+ ms\)\napplying 0002_/);
    assert.match(first.stdout, /\napplied: 0001_/);
    const db = new Database(join(dir, 'hearth.db'));
    db.prepare('insert into kysely_migration (name, timestamp) values (?, ?)').run('0099_from_the_future', new Date().toISOString());
    const tables = () => db.prepare("select name from sqlite_master where type = 'table' order by name").all();
    const before = tables();
    const { code, stderr } = await hearthServer(['migrate', '--data-dir', dir]);
    assert.equal(code, 65);
    assertOneLine(
      stderr,
      /^hearth-server: .*hearth\.db: the database has migration 0099_from_the_future, which this hearth-server does not know/,
    );
    assert.deepEqual(tables(), before);
    db.close();
  }),
);

test(
  'a short HEARTH_ADMIN_TOKEN starts the server with one warning on stderr that does not print the token',
  withDir(async (dir) => {
    const server = spawn(
      process.execPath,
      ['--import', 'tsx', BIN, 'serve', '--listen', '127.0.0.1:0', '--public-url', 'http://127.0.0.1:9', '--data-dir', dir],
      { env: { ...process.env, ...KEYS, HEARTH_ADMIN_TOKEN: 'tok', HEARTH_DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    server.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    server.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
    const kill = setTimeout(() => server.kill('SIGKILL'), 30_000);
    try {
      for (let waited = 0; !stdout.includes('listening') && waited < 30_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
      assert.match(stdout, /listening/, `the server starts: ${stderr}`);
    } finally {
      server.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
      clearTimeout(kill);
    }
    const warnings = stderr.split('\n').filter((line) => line.startsWith('hearth-server: warning:'));
    assert.equal(warnings.length, 1, stderr);
    assert.match(warnings[0]!, /HEARTH_ADMIN_TOKEN is 3 character\(s\) long.*at least 16/);
    assert.doesNotMatch(stderr + stdout, /\btok\b/, 'the token is never printed');
  }),
);
