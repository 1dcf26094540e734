import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NOT_UTF8, readUtf8File } from './io.ts';

test('readUtf8File reads UTF-8 byte for byte and refuses a file that is not UTF-8', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-io-'));
  try {
    writeFileSync(join(dir, 'utf8.sh'), Buffer.from('\ufeffecho héllo 😀\n', 'utf8'));
    assert.equal(await readUtf8File(join(dir, 'utf8.sh')), '\ufeffecho héllo 😀\n');
    // Latin-1 'é' and a lone 0xff: read as 'utf8' these became U+FFFD, and the config was uploaded so.
    writeFileSync(join(dir, 'latin1.sh'), Buffer.from([0x65, 0x63, 0x68, 0x6f, 0x20, 0xe9, 0x0a, 0xff]));
    await assert.rejects(readUtf8File(join(dir, 'latin1.sh')), (error: NodeJS.ErrnoException) => error.code === NOT_UTF8);
    await assert.rejects(readUtf8File(join(dir, 'missing.sh')), (error: NodeJS.ErrnoException) => error.code === 'ENOENT');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
