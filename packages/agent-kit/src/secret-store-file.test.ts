import { test } from 'node:test';
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFileSecretStore } from './secret-store-file.ts';
import { SecretStoreError } from './secret-store-error.ts';

const isRoot = process.getuid!() === 0;
const uid = process.getuid!();

/** A fresh 0700 dir holding the store's dir `secrets/` (not created yet) and its file `secrets/credentials.json`. */
async function tempStore(t: { after: (fn: () => Promise<void>) => void }) {
  const root = await mkdtemp(join(tmpdir(), 'hearth-secrets-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const dir = join(root, 'secrets');
  const path = join(dir, 'credentials.json');
  return { root, dir, path, store: createFileSecretStore(path) };
}

/** Asserts `promise` rejects with a SecretStoreError of `code` whose message matches every pattern. */
async function rejectsWith(promise: Promise<unknown>, code: string, ...patterns: RegExp[]): Promise<string> {
  const error = await promise.then(
    () => assert.fail('expected a rejection'),
    (reason: unknown) => reason,
  );
  assert.ok(error instanceof SecretStoreError, `not a SecretStoreError: ${String(error)}`);
  assert.equal(error.code, code, error.message);
  for (const pattern of patterns) assert.match(error.message, pattern);
  return error.message;
}

test('set creates a 0700 dir and a 0600 JSON file; get, list and delete see what was set', async (t) => {
  const { dir, path, store } = await tempStore(t);
  assert.equal(store.backend, 'file');
  assert.equal(store.location, path);
  assert.equal(await store.get('deploy_password'), undefined);
  assert.deepEqual(await store.list(), []);
  assert.equal(await store.delete('deploy_password'), false);
  await assert.rejects(stat(dir), { code: 'ENOENT' }, 'reading or deleting from a missing store creates nothing');

  await store.set('deploy_password', 'pa55 wörd\nwith a newline');
  await store.set('access_key', 'AKIA');
  await store.set('__proto__', 'not a prototype');
  assert.equal((await stat(dir)).mode & 0o7777, 0o700);
  assert.equal((await stat(path)).mode & 0o7777, 0o600);
  assert.deepEqual(Object.entries(JSON.parse(await readFile(path, 'utf8')) as object), [
    ['__proto__', 'not a prototype'],
    ['access_key', 'AKIA'],
    ['deploy_password', 'pa55 wörd\nwith a newline'],
  ]);
  assert.equal(await store.get('deploy_password'), 'pa55 wörd\nwith a newline');
  assert.equal(await store.get('__proto__'), 'not a prototype');
  assert.equal(await store.get('toString'), undefined);
  assert.deepEqual(await store.list(), ['__proto__', 'access_key', 'deploy_password']);

  await store.set('access_key', 'AKIA2');
  assert.equal(await store.get('access_key'), 'AKIA2');
  assert.equal(await store.delete('access_key'), true);
  assert.equal(await store.delete('access_key'), false);
  assert.deepEqual(await store.list(), ['__proto__', 'deploy_password']);
  assert.deepEqual(await readdir(dir), ['credentials.json'], 'no temp or lock file is left behind');
});

test('each change replaces the file atomically (a new inode), keeping 0600 even under a wide umask', async (t) => {
  const { path, store } = await tempStore(t);
  const umask = process.umask(0);
  try {
    await store.set('a', '1');
    const before = await stat(path);
    await store.set('a', '2');
    const after = await stat(path);
    assert.notEqual(after.ino, before.ino);
    assert.equal(after.mode & 0o7777, 0o600);
  } finally {
    process.umask(umask);
  }
});

test("a change removes the temp copy a writer killed mid-write left behind, and leaves a live writer's alone", async (t) => {
  const { dir, path, store } = await tempStore(t);
  await store.set('deploy_password', 'old');
  // A real pid that is no longer running: a child that has exited.
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  const crashed = `.credentials.json.${dead}.0123456789ab.tmp`;
  const live = `.credentials.json.${process.ppid}.0123456789ab.tmp`;
  await writeFile(join(dir, crashed), '{"deploy_password":"old"}', { mode: 0o600 });
  await writeFile(join(dir, live), '{"deploy_password":"old"}', { mode: 0o600 });
  await store.set('deploy_password', 'new');
  assert.deepEqual((await readdir(dir)).sort(), [live, 'credentials.json'].sort());
  assert.equal(await store.get('deploy_password'), 'new');
  assert.equal((await stat(path)).mode & 0o7777, 0o600);
});

test('concurrent sets from one process all land (read-modify-write under the lock)', async (t) => {
  const { store } = await tempStore(t);
  const names = Array.from({ length: 8 }, (_, index) => `secret_${index}`);
  await Promise.all(names.map((name) => store.set(name, `value of ${name}`)));
  assert.deepEqual(await store.list(), names);
  for (const name of names) assert.equal(await store.get(name), `value of ${name}`);
});

test('a file with a mode wider than 0600 is refused by every operation, with the chmod that fixes it', async (t) => {
  const { path, store } = await tempStore(t);
  await store.set('token', 'kept');
  for (const mode of [0o644, 0o640, 0o604, 0o700, 0o4600]) {
    await chmod(path, mode);
    const pattern = new RegExp(`file ${path} has mode ${mode.toString(8).padStart(4, '0')}, wider than 0600; fix: chmod 600 ${path}$`);
    await rejectsWith(store.get('token'), 'ERR_SECRET_FILE_UNSAFE', /^refusing to use secret file /, pattern);
    await rejectsWith(store.list(), 'ERR_SECRET_FILE_UNSAFE', pattern);
    await rejectsWith(store.set('token', 'new'), 'ERR_SECRET_FILE_UNSAFE', pattern);
    await rejectsWith(store.delete('token'), 'ERR_SECRET_FILE_UNSAFE', pattern);
  }
  await chmod(path, 0o400);
  assert.equal(await store.get('token'), 'kept', 'a narrower mode is fine, and the refused set changed nothing');
});

test('a directory with a mode wider than 0700 is refused, with or without the file in it', async (t) => {
  const { dir, path, store } = await tempStore(t);
  await store.set('token', 'kept');
  await chmod(dir, 0o755);
  await rejectsWith(
    store.get('token'),
    'ERR_SECRET_FILE_UNSAFE',
    new RegExp(`directory ${dir} has mode 0755, wider than 0700; fix: chmod 700 ${dir}$`),
  );
  await rm(path);
  await rejectsWith(store.get('token'), 'ERR_SECRET_FILE_UNSAFE', /chmod 700/);
  await rejectsWith(store.set('token', 'x'), 'ERR_SECRET_FILE_UNSAFE', /chmod 700/);
  await assert.rejects(stat(path), { code: 'ENOENT' }, 'nothing written into the unsafe dir');
  await chmod(dir, 0o700);
  await store.set('token', 'x');
  assert.equal(await store.get('token'), 'x');
});

test(
  'a file and a directory owned by another uid are refused, with the chown (and chmod) lines that fix them',
  { skip: !isRoot && 'chown needs root' },
  async (t) => {
    const { dir, path, store } = await tempStore(t);
    await store.set('token', 'kept');
    await chown(path, 65534, 65534);
    await rejectsWith(
      store.get('token'),
      'ERR_SECRET_FILE_UNSAFE',
      new RegExp(`file ${path} is owned by uid 65534, not by uid ${uid} that runs this agent; fix: chown ${uid} ${path}$`),
    );
    await chown(dir, 65534, 65534);
    await chmod(path, 0o666);
    const message = await rejectsWith(store.list(), 'ERR_SECRET_FILE_UNSAFE');
    assert.ok(message.endsWith(`; fix: chown ${uid} ${dir} && chown ${uid} ${path} && chmod 600 ${path}`), message);
    await chown(dir, uid, uid);
    await chown(path, uid, uid);
    await chmod(path, 0o600);
    assert.equal(await store.get('token'), 'kept');
  },
);

test('the fix line quotes a path a shell would split', async (t) => {
  const { root } = await tempStore(t);
  const dir = join(root, "it's here");
  const store = createFileSecretStore(join(dir, 'credentials.json'));
  await store.set('a', 'b');
  await chmod(dir, 0o750);
  await rejectsWith(store.get('a'), 'ERR_SECRET_FILE_UNSAFE', new RegExp(`fix: chmod 700 '${root}/it'\\\\''s here'$`));
});

test('a symlink in place of the file is refused, not followed', async (t) => {
  const { root, dir, path, store } = await tempStore(t);
  const elsewhere = join(root, 'elsewhere.json');
  await writeFile(elsewhere, '{"token":"from elsewhere"}', { mode: 0o600 });
  await mkdir(dir, { mode: 0o700 });
  await symlink(elsewhere, path);
  await rejectsWith(store.get('token'), 'ERR_SECRET_FILE_UNSAFE', /is a symbolic link, not a regular file/);
  await rejectsWith(store.set('token', 'x'), 'ERR_SECRET_FILE_UNSAFE', /symbolic link/);
  assert.ok((await lstat(path)).isSymbolicLink());
  assert.equal(await readFile(elsewhere, 'utf8'), '{"token":"from elsewhere"}');
});

test('a corrupt file is reported without quoting its content; an empty one is an empty store', async (t) => {
  const { dir, path, store } = await tempStore(t);
  await mkdir(dir, { mode: 0o700 });
  const cases: Array<[string, RegExp]> = [
    ['{"token": "s3cr3t-value", oops}', /is not valid JSON/],
    ['s3cr3t-value', /is not valid JSON/],
    ['["s3cr3t-value"]', /must hold a JSON object/],
    ['{"token": ["s3cr3t-value"]}', /the value of "token" is a object, not a string/],
  ];
  for (const [content, pattern] of cases) {
    await writeFile(path, content, { mode: 0o600 });
    const message = await rejectsWith(store.get('token'), 'ERR_SECRET_FILE_CORRUPT', pattern);
    assert.doesNotMatch(message, /s3cr3t/);
    await rejectsWith(store.set('other', 'v'), 'ERR_SECRET_FILE_CORRUPT', pattern);
  }
  await writeFile(path, '\n', { mode: 0o600 });
  assert.deepEqual(await store.list(), []);
  await store.set('token', 'v');
  assert.equal(await store.get('token'), 'v');
});

test('bad names and values are rejected without showing the value', async (t) => {
  const { path, store } = await tempStore(t);
  await rejectsWith(store.get(''), 'ERR_SECRET_NAME', /non-empty string/);
  await rejectsWith(store.set('a\0b', 'v'), 'ERR_SECRET_NAME', /without NUL/);
  await rejectsWith(store.set('token', ''), 'ERR_SECRET_VALUE', /secret "token": .* an empty string; use delete\(\)/);
  const message = await rejectsWith(store.set('token', 'hidden\0value'), 'ERR_SECRET_VALUE', /a string with NUL/);
  assert.doesNotMatch(message, /hidden/);
  await rejectsWith(store.set('token', 42 as unknown as string), 'ERR_SECRET_VALUE', /got a number/);
  await assert.rejects(stat(path), { code: 'ENOENT' });
});
