import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  ADMIN_TOKEN_ADVISED_LENGTH,
  EXIT,
  ExitError,
  adminTokenWarning,
  describeStore,
  loadOrCreateSecret,
  resolveSettings,
} from './config.ts';
import { openStore } from './store/store.ts';

test('flags win over HEARTH_* env, env over defaults', () => {
  const { settings, errors } = resolveSettings(
    { listen: '127.0.0.1:9001' },
    { HEARTH_LISTEN: '127.0.0.1:9002', HEARTH_LOG_LEVEL: 'debug' },
  );
  assert.deepEqual(errors, []);
  assert.equal(settings?.port, 9001);
  assert.equal(settings?.logLevel, 'debug');
  assert.equal(settings?.publicUrl, 'http://127.0.0.1:9001');
  assert.equal(settings?.alarmSchedule, undefined);
});

test('HEARTH_ALARM_SCHEDULE is checked as a cron expression and passed on', () => {
  assert.equal(resolveSettings({}, { HEARTH_ALARM_SCHEDULE: '*/30 * * * * *' }).settings?.alarmSchedule, '*/30 * * * * *');
  const bad = resolveSettings({}, { HEARTH_ALARM_SCHEDULE: 'every minute' });
  assert.equal(bad.settings, undefined);
  assert.match(bad.errors.join('\n'), /HEARTH_ALARM_SCHEDULE every minute is not a cron expression/);
});

test('events retention: 30 days by default, the flag over HEARTH_EVENTS_RETENTION_DAYS, 0 keeps events for ever', () => {
  assert.equal(resolveSettings({}, {}).settings?.eventsRetentionDays, 30);
  assert.equal(resolveSettings({}, { HEARTH_EVENTS_RETENTION_DAYS: '' }).settings?.eventsRetentionDays, 30);
  assert.equal(resolveSettings({}, { HEARTH_EVENTS_RETENTION_DAYS: '7' }).settings?.eventsRetentionDays, 7);
  assert.equal(resolveSettings({ eventsRetentionDays: '0' }, { HEARTH_EVENTS_RETENTION_DAYS: '7' }).settings?.eventsRetentionDays, 0);
  assert.equal(resolveSettings({ eventsRetentionDays: '36500' }, {}).settings?.eventsRetentionDays, 36500);
});

test('an events retention that is not a whole number of days from 0 to 36500 is refused, naming the flag and the variable', () => {
  for (const value of ['-1', '1.5', '36501', '99999999', 'thirty', ' 30', '1e3', '']) {
    const { settings, errors } = resolveSettings({ eventsRetentionDays: value }, {});
    assert.equal(settings, undefined, value);
    assert.equal(errors.length, 1, value);
    assert.match(
      errors[0]!,
      /^--events-retention-days \(env HEARTH_EVENTS_RETENTION_DAYS\) ".*" is not a whole number of days from 0 to 36500/,
    );
  }
  assert.match(resolveSettings({}, { HEARTH_EVENTS_RETENTION_DAYS: 'x' }).errors.join('\n'), /HEARTH_EVENTS_RETENTION_DAYS\) "x"/);
});

test('bad listen addresses and log levels are reported, all at once', () => {
  const { settings, errors } = resolveSettings({ listen: 'nowhere', logLevel: 'loud' }, {});
  assert.equal(settings, undefined);
  assert.equal(errors.length, 2);
});

test('database URLs are checked with the other settings, and the errors never repeat a password', () => {
  for (const databaseUrl of ['mysql://u:hunter2@db/x', 'postgres://u:hunter2@[db/x', 'postgres:u:hunter2', 'sqlite:']) {
    const { settings, errors } = resolveSettings({ databaseUrl }, {});
    assert.equal(settings, undefined, databaseUrl);
    assert.match(errors.join('\n'), /database URL .*use postgres:\/\/USER:PASSWORD@HOST:PORT\/DATABASE/, databaseUrl);
    assert.doesNotMatch(errors.join('\n'), /hunter2/);
  }
  assert.equal(resolveSettings({ databaseUrl: 'postgresql://u:p@db:5432/x' }, {}).settings?.databaseUrl, 'postgresql://u:p@db:5432/x');
  assert.equal(resolveSettings({}, { HEARTH_DATABASE_URL: 'sqlite:/var/lib/h.db' }).settings?.databaseUrl, 'sqlite:/var/lib/h.db');
  // A unix socket names no host, only its directory (libpq's form); a relative "directory" is no socket.
  const socket = 'postgres:///hearth?host=/run/postgresql';
  assert.equal(resolveSettings({ databaseUrl: socket }, {}).settings?.databaseUrl, socket);
  assert.match(
    resolveSettings({ databaseUrl: 'postgres:///hearth?host=run' }, {}).errors.join('\n'),
    /with a host \(or \?host=\/SOCKET\/DIR\)/,
  );
  assert.match(resolveSettings({ databaseUrl: 'postgres:///hearth' }, {}).errors.join('\n'), /with a host/);
});

test('the store is described without the password or query of its URL', () => {
  const store = describeStore({ dataDir: '/d', databaseUrl: 'postgres://hearth:hunter2@db:5432/hearth?password=hunter3&sslmode=require' });
  assert.equal(store, 'postgres://hearth@db:5432/hearth');
  assert.equal(describeStore({ dataDir: '/d' }), 'SQLite in /d/hearth.db');
});

test('--listen HOST:0 needs a public URL: agents cannot guess the port picked', () => {
  assert.match(resolveSettings({ listen: '127.0.0.1:0' }, {}).errors.join('\n'), /picks a port at random.*--public-url/);
  assert.equal(resolveSettings({ listen: '127.0.0.1:0', publicUrl: 'http://lb.example' }, {}).settings?.publicUrl, 'http://lb.example');
});

test('the public URL is written as clients send their Host: lower-case host, no default port, no trailing /', () => {
  const publicUrl = (url: string) => resolveSettings({ publicUrl: url }, {}).settings?.publicUrl;
  assert.equal(publicUrl('https://Hearth.Example:443/'), 'https://hearth.example');
  assert.equal(publicUrl('http://hearth.example:80'), 'http://hearth.example');
  assert.equal(publicUrl('https://hearth.example:8443/hearth/'), 'https://hearth.example:8443/hearth');
  assert.equal(publicUrl('http://[0:0::1]:8000'), 'http://[::1]:8000');
  assert.equal(resolveSettings({}, { HEARTH_PUBLIC_URL: 'https://lb.example:443' }).settings?.publicUrl, 'https://lb.example');
});

test('a public URL with credentials, a query, a fragment or a bad port is refused, saying why', () => {
  const refused = (url: string, why: RegExp) => {
    const { settings, errors } = resolveSettings({ publicUrl: url }, {});
    assert.equal(settings, undefined, url);
    assert.match(errors.join('\n'), why, url);
  };
  refused('https://user:hunter2@hearth.example', /public URL https:\/\/\*\*\*@hearth\.example must not carry a user name or password/);
  refused('https://hearth.example/?x=1', /must not have a query or fragment/);
  refused('https://hearth.example/?', /must not have a query or fragment/);
  refused('https://hearth.example/#top', /must not have a query or fragment/);
  refused('https://hearth.example:99999', /public URL https:\/\/hearth\.example:99999 is not a valid URL/);
  refused('ftp://hearth.example', /is not an http\(s\) URL/);
});

function secretDir(content?: string, mode = 0o600): string {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-config-'));
  if (content !== undefined) writeFileSync(join(dir, 'secret-key'), content, { mode });
  chmodSync(dir, 0o700);
  return dir;
}

function exitOf(run: () => unknown): { exitCode: number; message: string } {
  try {
    run();
  } catch (error) {
    assert.ok(error instanceof ExitError, String(error));
    return { exitCode: error.exitCode, message: error.message };
  }
  return assert.fail('expected an ExitError');
}

test('an empty or short secret file is refused with what to do, never silently replaced', () => {
  for (const content of ['', '\n', 'tooshort\n']) {
    const dir = secretDir(content);
    try {
      const { exitCode, message } = exitOf(() => loadOrCreateSecret(dir, 'secret-key', undefined));
      assert.equal(exitCode, EXIT.dataError);
      assert.match(message, /secret-key is (empty|8 characters long, under the 16 needed): restore it, or delete it/);
      assert.equal(readFileSync(join(dir, 'secret-key'), 'utf8'), content, 'the file is left as it was');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
});

test('a secret file other users can read is refused', () => {
  const dir = secretDir('0123456789abcdef0123456789\n', 0o644);
  chmodSync(join(dir, 'secret-key'), 0o644);
  try {
    const { exitCode, message } = exitOf(() => loadOrCreateSecret(dir, 'secret-key', undefined));
    assert.equal(exitCode, EXIT.permission);
    assert.match(message, /can be read by other users \(mode 0644\): chmod 600 /);
    assert.doesNotMatch(message, /0123456789abcdef/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a too-short HEARTH_SECRET_KEY is a usage error that names the variable, not the value', () => {
  const dir = secretDir();
  try {
    const { exitCode, message } = exitOf(() => loadOrCreateSecret(dir, 'secret-key', 'hunter2hunter2'));
    assert.equal(exitCode, EXIT.usage);
    assert.match(message, /HEARTH_SECRET_KEY is 14 characters long: it needs at least 16/);
    assert.doesNotMatch(message, /hunter2/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('secrets are generated once into 0600 files and read back', () => {
  const dir = join(secretDir(), 'sub');
  try {
    const first = loadOrCreateSecret(dir, 'secret-key', undefined);
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(first.source).mode & 0o777, 0o600);
    assert.equal(loadOrCreateSecret(dir, 'secret-key', undefined).value, first.value);
    assert.deepEqual(readdirSync(dir), ['secret-key'], 'no temporary file is left');
  } finally {
    rmSync(dirname(dir), { recursive: true, force: true });
  }
});

test('a database URL the store does not take is named without its password or query string', () => {
  assert.throws(
    () => openStore({ dataDir: '/nonexistent', databaseUrl: 'mysql://app:pw-secret@db.local/hearth?password=hunter2secret' }),
    (error: Error) =>
      /mysql:\/\/app:\*\*\*@db\.local\/hearth\?\*\*\* is not supported/.test(error.message) && !/secret/.test(error.message),
  );
});

test('listening on every address without a public URL warns that agents would get 127.0.0.1 URLs', () => {
  const wild = resolveSettings({ listen: '0.0.0.0:8000' }, {});
  assert.equal(wild.settings?.publicUrl, 'http://127.0.0.1:8000');
  assert.match(wild.warnings?.join('\n') ?? '', /--listen 0\.0\.0\.0:8000: .*VMs cannot reach; set --public-url/);
  assert.deepEqual(resolveSettings({ listen: '[::]:8000', publicUrl: 'http://10.0.0.5:8000' }, {}).warnings, []);
  assert.deepEqual(resolveSettings({ listen: '127.0.0.1:8000' }, {}).warnings, []);
});

test('a short admin token is accepted with a warning that says where it came from, never the token', () => {
  const fromEnv = adminTokenWarning({ value: 'hunter2', source: 'environment' });
  assert.match(fromEnv ?? '', /^HEARTH_ADMIN_TOKEN is 7 character\(s\) long, easy to guess.*at least 16 \(try: openssl rand -base64 32\)$/);
  assert.doesNotMatch(fromEnv ?? '', /hunter2/);
  const fromFile = adminTokenWarning({ value: 't', source: '/var/lib/hearth/admin-token' });
  assert.match(fromFile ?? '', /^the admin token in \/var\/lib\/hearth\/admin-token is 1 character\(s\) long/);
  assert.equal(adminTokenWarning({ value: 'x'.repeat(ADMIN_TOKEN_ADVISED_LENGTH), source: 'environment' }), undefined);
  const dir = secretDir();
  try {
    assert.equal(adminTokenWarning(loadOrCreateSecret(dir, 'admin-token', undefined)), undefined, 'a generated token is long enough');
    assert.equal(loadOrCreateSecret(dir, 'admin-token', 't').value, 't', 'a short one is not refused');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
