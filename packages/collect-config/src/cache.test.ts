import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openCache } from './cache.ts';
import { tempDir } from './test-support/fixtures.ts';

test('store writes <key>.json (0600, Python indent=1) and .orig once; changed until committed', async () => {
  const dir = join(tempDir(), 'cache');
  const cache = openCache(dir);
  const first = await cache.store('cfn', { a: 1 });
  assert.deepEqual(first, { changed: true, path: join(dir, 'cfn.json') });
  assert.equal(readFileSync(join(dir, 'cfn.json'), 'utf8'), '{\n "a": 1\n}');
  assert.equal(readFileSync(join(dir, 'cfn.json.orig'), 'utf8'), '{\n "a": 1\n}');
  assert.equal(statSync(join(dir, 'cfn.json')).mode & 0o777, 0o600);
  assert.equal(statSync(join(dir, 'cfn.json.orig')).mode & 0o777, 0o600);
  assert.equal(existsSync(join(dir, 'cfn.json.last')), false);

  assert.equal((await cache.store('cfn', { a: 1 })).changed, true, 'no .last yet: still changed');
  await cache.commit('cfn');
  assert.equal(readFileSync(join(dir, 'cfn.json.last'), 'utf8'), '{\n "a": 1\n}');
  assert.equal((await cache.store('cfn', { a: 1 })).changed, false);

  await cache.store('cfn', { a: 2 });
  assert.equal(readFileSync(join(dir, 'cfn.json.orig'), 'utf8'), '{\n "a": 1\n}', '.orig is never updated');
  assert.equal((await cache.store('cfn', { a: 2 })).changed, true);
});

test('change detection compares parsed JSON, not bytes', async () => {
  const dir = tempDir();
  const cache = openCache(dir);
  await cache.store('k', { a: 1, b: 2 });
  writeFileSync(join(dir, 'k.json.last'), '{"b":2,"a":1}');
  assert.equal((await cache.store('k', { a: 1, b: 2 })).changed, false);
  writeFileSync(join(dir, 'k.json.last'), 'not json');
  assert.equal((await cache.store('k', { a: 1, b: 2 })).changed, true, 'an unreadable .last counts as changed');
});

test('os_config_files.json lists the paths as Python writes them; backup replaces the backup dir', async () => {
  const root = tempDir();
  const dir = join(root, 'cache');
  const backup = join(root, 'backup');
  const cache = openCache(dir);
  await cache.store('a', 1);
  await cache.store('b', 2);
  const listPath = await cache.storeMetaList(['a', 'b']);
  assert.equal(listPath, join(dir, 'os_config_files.json'));
  assert.equal(readFileSync(listPath, 'utf8'), `["${dir}/a.json", "${dir}/b.json"]`);
  cache.backup(backup);
  writeFileSync(join(root, 'stale'), '');
  assert.equal(readFileSync(join(backup, 'a.json'), 'utf8'), '1');
  await cache.store('c', 3);
  writeFileSync(join(backup, 'old-file'), 'x');
  cache.backup(backup);
  assert.equal(existsSync(join(backup, 'old-file')), false, 'the old backup is removed first');
  assert.equal(readFileSync(join(backup, 'c.json'), 'utf8'), '3');
});

test('backup drops a temp file left by a write killed mid-way instead of copying it', async () => {
  const dir = tempDir();
  const cache = openCache(join(dir, 'cache'));
  await cache.store('heat', { password: 'p' });
  const dead = spawnSync('true').pid;
  const leftover = `.heat.json.${dead}.0123456789ab.tmp`;
  writeFileSync(join(cache.dir, leftover), '{"password": "p"}');
  cache.backup(join(dir, 'backup'));
  assert.ok(!readdirSync(cache.dir).includes(leftover));
  assert.ok(!readdirSync(join(dir, 'backup')).includes(leftover));
  assert.ok(existsSync(join(dir, 'backup', 'heat.json')));
});

test('backup never deletes a file that backup_cachedir points at by mistake; a symlink is replaced, its target kept', async () => {
  const root = tempDir();
  const cache = openCache(join(root, 'cache'));
  await cache.store('a', 1);
  const file = join(root, 'notes.txt');
  writeFileSync(file, 'precious');
  assert.throws(() => cache.backup(file), /backup_cachedir .*notes\.txt is not a directory/);
  assert.equal(readFileSync(file, 'utf8'), 'precious');
  const target = join(root, 'elsewhere');
  mkdirSync(target);
  writeFileSync(join(target, 'keep'), 'k');
  symlinkSync(target, join(root, 'link'));
  cache.backup(join(root, 'link'));
  assert.equal(readFileSync(join(root, 'link', 'a.json'), 'utf8'), '1');
  assert.equal(readFileSync(join(target, 'keep'), 'utf8'), 'k');
});

test('started with umask 000, os-collect-config keeps the cache and its backup private: dirs 0700, files 0600', () => {
  const root = tempDir();
  const local = join(root, 'local');
  mkdirSync(local);
  writeFileSync(join(local, 'site.json'), '{"db_password": "S3cret"}');
  const cachedir = join(root, 'var/lib/os-collect-config');
  const backup = join(root, 'var/run/os-collect-config');
  const bin = new URL('../bin/os-collect-config.js', import.meta.url).pathname;
  const args = ['local', '--local-path', local, '--one-time', '-c', 'true', '--cachedir', cachedir, '--backup-cachedir', backup];
  const result = spawnSync('/bin/sh', ['-c', 'umask 000 && exec "$@"', 'sh', process.execPath, bin, ...args], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root },
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(result.status, 0, result.stderr);
  for (const dir of [cachedir, backup]) {
    // The original's os.mkdir left them 0777 here: anyone could replace the metadata root's command consumes.
    assert.equal((statSync(dir).mode & 0o777).toString(8), '700', dir);
    const names = readdirSync(dir);
    assert.ok(names.includes('site.json.json'), names.join(' '));
    for (const name of names) assert.equal((statSync(join(dir, name)).mode & 0o777).toString(8), '600', join(dir, name));
  }
});
