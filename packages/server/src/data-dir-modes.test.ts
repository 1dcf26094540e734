// Spawns real `hearth-server` processes (node --import tsx src/bin.ts) on real data dirs: the modes of what it
// writes there whatever the umask, and data dirs other users could put files into.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { freePort } from '../../../test/helpers/server.ts';
import { BIN, binEnv, hearthServer, withDir } from './bin-test-support.ts';

const withDirHere = (run: (dir: string) => Promise<void>) => withDir(run, 'hearth-data-dir-');

const KEYS = { HEARTH_ADMIN_TOKEN: 'test-admin-token-0123', HEARTH_SECRET_KEY: 'test-secret-key-0123456789abcdef' };

function modes(dir: string): Record<string, string> {
  const entries: Record<string, string> = { '.': (statSync(dir).mode & 0o777).toString(8) };
  for (const name of readdirSync(dir)) entries[name] = (statSync(join(dir, name)).mode & 0o777).toString(8);
  return entries;
}

test(
  'under umask 000 a fresh data dir is 0700 and every file serve writes in it 0600, the WAL and SHM files too',
  withDirHere(async (dir) => {
    const data = join(dir, 'data');
    const port = await freePort();
    const server = spawn(
      '/bin/sh',
      [
        '-c',
        'umask 000 && exec "$0" --import tsx "$@"',
        process.execPath,
        BIN,
        'serve',
        '--listen',
        `127.0.0.1:${port}`,
        '--data-dir',
        data,
      ],
      { env: binEnv({}), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    server.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    server.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => server.on('exit', (code) => resolve(code)));
    const kill = setTimeout(() => server.kill('SIGKILL'), 30_000);
    try {
      for (let waited = 0; !output.includes('listening on') && waited < 30_000; waited += 100) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.match(output, /listening on/, output);
      // A write, so that the WAL holds something.
      const token = readFileSync(join(data, 'admin-token'), 'utf8').trim();
      const response = await fetch(`http://127.0.0.1:${port}/v1/default/software_configs`, {
        method: 'POST',
        headers: { 'X-Auth-Token': token, 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'modes', group: 'script', config: 'true' }),
      });
      assert.equal(response.status, 200);
      assert.deepEqual(modes(data), {
        '.': '700',
        'admin-token': '600',
        'secret-key': '600',
        'hearth.db': '600',
        'hearth.db-wal': '600',
        'hearth.db-shm': '600',
      });
      assert.ok(!output.includes(token), 'the generated admin token is never printed');
    } finally {
      server.kill('SIGTERM');
      assert.equal(await exited, 0, output);
      clearTimeout(kill);
    }
  }),
);

test(
  'a data dir group or others can write: serve and migrate stop with exit 77 and the chmod to run, and touch nothing',
  withDirHere(async (dir) => {
    for (const mode of [0o777, 0o775, 0o1777]) {
      const data = join(dir, `data-${mode.toString(8)}`);
      mkdirSync(data);
      chmodSync(data, mode);
      for (const args of [['serve', '--listen', '127.0.0.1:0', '--public-url', 'http://127.0.0.1:9'], ['migrate']]) {
        const { code, stdout, stderr } = await hearthServer([...args, '--data-dir', data], {}, '000');
        assert.equal(code, 77, `${args[0]} ${mode.toString(8)}: ${stderr}`);
        assert.equal(stdout, '');
        assert.equal(
          stderr,
          `hearth-server: the data dir ${data} can be written by other users (mode 0${(mode & 0o777).toString(8)}), who could replace the secrets and the database in it: chmod go-w ${data}\n`,
        );
        assert.deepEqual(readdirSync(data), [], 'nothing is written there');
        assert.equal(statSync(data).mode & 0o7777, mode, 'its mode is left as it was');
      }
    }
    // Not read at all (secrets from env, the database elsewhere): not checked.
    const loose = join(dir, 'data-777');
    const elsewhere = await hearthServer(['migrate', '--data-dir', loose, '--database-url', `sqlite:${join(dir, 'other.db')}`]);
    assert.equal(elsewhere.code, 0, elsewhere.stderr);
  }),
);

test(
  'a data dir that belongs to another user: exit 77 naming the owner',
  { skip: process.getuid?.() !== 0 && 'needs root to give a directory away' },
  withDirHere(async (dir) => {
    const data = join(dir, 'data');
    mkdirSync(data, { mode: 0o755 });
    chownSync(data, 65534, 65534);
    const { code, stderr } = await hearthServer(['migrate', '--data-dir', data]);
    assert.equal(code, 77, stderr);
    assert.equal(
      stderr,
      `hearth-server: the data dir ${data} belongs to user 65534, not to this user (0); user 65534 could replace the secrets and the database in it: chown 0 ${data}, or run hearth-server as user 65534\n`,
    );
    assert.deepEqual(readdirSync(data), []);
  }),
);

test(
  'a SQLite file another process holds the write lock of: serve and migrate stop with exit 75 and one line saying to run again',
  withDirHere(async (dir) => {
    const file = join(dir, 'hearth.db');
    const holder = new Database(file);
    holder.pragma('journal_mode = WAL');
    holder.exec('begin immediate');
    try {
      for (const args of [['migrate'], ['serve', '--listen', '127.0.0.1:0', '--public-url', 'http://127.0.0.1:9']]) {
        const { code, stdout, stderr } = await hearthServer([...args, '--data-dir', dir], KEYS);
        assert.equal(code, 75, `${args[0]}: ${stderr}`);
        assert.doesNotMatch(stdout, /listening/);
        assert.equal(
          stderr,
          `hearth-server: ${file} is locked by another process (database is locked), likely another hearth-server migrating or writing it: run this again once that is done\n`,
        );
      }
    } finally {
      holder.exec('rollback');
      holder.close();
    }
    // Once the lock is released, the same command works.
    const after = await hearthServer(['migrate', '--data-dir', dir], KEYS);
    assert.equal(after.code, 0, after.stderr);
  }),
);
