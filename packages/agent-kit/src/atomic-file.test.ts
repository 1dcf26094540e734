import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { parentsOfCreated, removeStaleTempFiles, writeFileAtomic, writeFileAtomicSync } from './atomic-file.ts';

function tempDir(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'agent-kit-atomic-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const variants = [
  { name: 'writeFileAtomic', write: writeFileAtomic },
  { name: 'writeFileAtomicSync', write: async (...args: Parameters<typeof writeFileAtomicSync>) => writeFileAtomicSync(...args) },
];

for (const { name, write } of variants) {
  test(`${name} writes a new file with mode 0600 and leaves no temp file`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'data.json');
    await write(path, '{"a":1}');
    assert.equal(readFileSync(path, 'utf8'), '{"a":1}');
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir), ['data.json']);
  });

  test(`${name} replaces an existing file and applies the requested mode exactly, whatever the umask`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'data');
    writeFileSync(path, 'old content that is longer', { mode: 0o600 });
    const previous = process.umask(0o077);
    try {
      await write(path, Buffer.from([0, 1, 2, 255]), { mode: 0o644 });
    } finally {
      process.umask(previous);
    }
    assert.deepEqual([...readFileSync(path)], [0, 1, 2, 255]);
    assert.equal(statSync(path).mode & 0o777, 0o644);
    assert.deepEqual(readdirSync(dir), ['data']);
  });

  test(`${name} creates missing parent directories with mode 0700`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'a', 'b', 'file');
    await write(path, 'x');
    assert.equal(readFileSync(path, 'utf8'), 'x');
    assert.equal(statSync(join(dir, 'a', 'b')).mode & 0o777, 0o700);
  });

  test(`${name} fails when the target is a directory and cleans up its temp file`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'taken');
    mkdirSync(path);
    writeFileSync(join(path, 'inside'), 'keep');
    await assert.rejects(write(path, 'x'), (error: NodeJS.ErrnoException) => ['EISDIR', 'ENOTEMPTY', 'EEXIST'].includes(error.code ?? ''));
    assert.deepEqual(readdirSync(dir), ['taken']);
    assert.equal(readFileSync(join(path, 'inside'), 'utf8'), 'keep');
  });

  test(`${name} names the target in its error, keeping the code (a failed write or rename names no file, or only the temp one)`, async (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'state.json');
    mkdirSync(join(path, 'inside'), { recursive: true });
    await assert.rejects(write(path, 'x'), (error: NodeJS.ErrnoException) => {
      assert.ok(error.message.startsWith(`cannot write ${path}: `), error.message);
      assert.ok(['EISDIR', 'ENOTEMPTY', 'EEXIST'].includes(error.code ?? ''), error.code);
      return true;
    });
  });

  test(`${name} fails when a parent is a regular file`, async (t) => {
    const dir = tempDir(t);
    writeFileSync(join(dir, 'plain'), '');
    await assert.rejects(
      write(join(dir, 'plain', 'child'), 'x'),
      (error: NodeJS.ErrnoException) => error.code === 'ENOTDIR' || error.code === 'EEXIST',
    );
  });
}

test('concurrent atomic writes leave one complete version, never a mix', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'contended');
  const versions = Array.from({ length: 20 }, (_, index) => String(index).repeat(50_000));
  await Promise.all(versions.map((content) => writeFileAtomic(path, content)));
  assert.ok(versions.includes(readFileSync(path, 'utf8')));
  assert.deepEqual(readdirSync(dir), ['contended']);
});

test('removeStaleTempFiles removes the temp files of dead writers only', () => {
  const dir = mkdtempSync(join(tmpdir(), 'atomic-stale-'));
  try {
    // A pid that has certainly exited: a child that ran and was reaped.
    const dead = spawnSync('true').pid;
    writeFileSync(join(dir, `.meta.json.${dead}.0123456789ab.tmp`), '{"password":"x"}');
    writeFileSync(join(dir, `.meta.json.${process.pid}.0123456789ab.tmp`), 'being written by this process');
    writeFileSync(join(dir, `.other.json.1.abcdefabcdef.tmp`), 'pid 1 (init) is alive');
    writeFileSync(join(dir, 'meta.json'), '{}');
    writeFileSync(join(dir, `.notes.${dead}.tmp`), 'not a name the atomic writer makes');
    assert.deepEqual(removeStaleTempFiles(dir), [`.meta.json.${dead}.0123456789ab.tmp`]);
    assert.deepEqual(readdirSync(dir).sort(), [
      `.meta.json.${process.pid}.0123456789ab.tmp`,
      `.notes.${dead}.tmp`,
      '.other.json.1.abcdefabcdef.tmp',
      'meta.json',
    ]);
    assert.deepEqual(removeStaleTempFiles(join(dir, 'missing')), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the directories a write creates are made durable in their parents, outermost first', () => {
  assert.deepEqual(parentsOfCreated(undefined, '/var/lib/x/outbox'), []);
  assert.deepEqual(parentsOfCreated('/var/lib/x/outbox', '/var/lib/x/outbox'), ['/var/lib/x']);
  assert.deepEqual(parentsOfCreated('/var/lib/x', '/var/lib/x/a/outbox'), ['/var/lib', '/var/lib/x', '/var/lib/x/a']);
});

// What a power loss keeps is what was fsynced: strace shows which directories were (the test needs strace).
const strace = spawnSync('strace', ['-V']).status === 0;
for (const variant of ['writeFileAtomic', 'writeFileAtomicSync']) {
  test(
    `${variant} fsyncs the file, its directory, and the parent of every directory it created`,
    { skip: !strace && 'no strace here' },
    (t) => {
      const root = tempDir(t);
      const target = join(root, 'a', 'b', 'outbox', 'entry.json');
      const script = `import(${JSON.stringify(new URL('./atomic-file.ts', import.meta.url).href)}).then((m) => m.${variant}(process.argv[1], 'x'))`;
      const traced = spawnSync(
        'strace',
        ['-f', '-qq', '-e', 'trace=fsync,fdatasync', '-y', process.execPath, '--import', 'tsx', '-e', script, target],
        { encoding: 'utf8', timeout: 30_000 },
      );
      assert.equal(traced.status, 0, traced.stderr);
      assert.equal(readFileSync(target, 'utf8'), 'x');
      const synced = [...traced.stderr.matchAll(/fsync\(\d+<([^>]+)>\)/g)].map((match) => match[1]!);
      const expected = [join(root, 'a', 'b', 'outbox'), root, join(root, 'a'), join(root, 'a', 'b')];
      for (const dir of expected) assert.ok(synced.includes(dir), `${dir} was not fsynced: ${synced.join(', ')}`);
      assert.ok(
        synced.some((path) => path.startsWith(join(root, 'a', 'b', 'outbox', '.entry.json.'))),
        'the temp file is fsynced',
      );
    },
  );
}
