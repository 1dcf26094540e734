import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeRenderedFile } from './write-file.ts';

test('writes the body with mode 0644 by default, through a temp file that does not stay', () => {
  const dir = mkdtempSync(join(tmpdir(), 'apply-config-write-'));
  const path = join(dir, 'etc', 'app.conf');
  assert.equal(writeRenderedFile(path, { target: 'etc/app.conf', body: 'a=1\n', allowEmpty: true }), 'written');
  assert.equal(readFileSync(path, 'utf8'), 'a=1\n');
  assert.equal(statSync(path).mode & 0o777, 0o644);
  assert.deepEqual(readdirSync(join(dir, 'etc')), ['app.conf']);
});

test('a write that fails (a directory where the file goes) throws and leaves no temp file behind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'apply-config-write-'));
  const path = join(dir, 'app.conf');
  mkdirSync(path);
  for (let run = 0; run < 2; run++) {
    assert.throws(() => writeRenderedFile(path, { target: 'app.conf', body: 'a=1\n', allowEmpty: true }), /EISDIR|EEXIST|ENOTEMPTY/);
  }
  assert.deepEqual(readdirSync(dir), ['app.conf'], 'only the directory that was in the way');
  assert.ok(statSync(path).isDirectory());
});
