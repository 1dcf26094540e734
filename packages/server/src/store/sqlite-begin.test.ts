// The main connection's transactions take SQLite's write lock when they begin (BEGIN IMMEDIATE). With a
// deferred BEGIN, a transaction that read before another process wrote could not write at all: SQLite
// fails it at once (SQLITE_BUSY_SNAPSHOT, no busy wait). `hearth-server migrate` started beside a
// starting `serve` failed that way about one time in ten.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sql } from 'kysely';
import { openSqlite } from './sqlite.ts';

test('a transaction on the writer holds the write lock from its start: another process writing between its read and its write cannot make it fail', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-begin-'));
  const file = join(dir, 'hearth.db');
  const { writer, reader, raw } = openSqlite(file);
  const other = new Database(file);
  other.pragma('busy_timeout = 0');
  try {
    await sql`create table t (n integer)`.execute(writer);
    let otherWrite = 'not tried';
    await writer.transaction().execute(async (trx) => {
      await sql`select count(*) from t`.execute(trx);
      // Another process writes now: it must wait for this transaction, not slip in before its write.
      try {
        other.exec('insert into t values (2)');
        otherWrite = 'written';
      } catch (error) {
        otherWrite = (error as { code?: string }).code ?? String(error);
      }
      await sql`insert into t values (1)`.execute(trx);
    });
    assert.equal(otherWrite, 'SQLITE_BUSY', 'the other writer waits for the lock this transaction took at BEGIN');
    const rows = await sql<{ n: number }>`select n from t order by n`.execute(reader);
    assert.deepEqual(
      rows.rows.map((row) => row.n),
      [1],
      'this transaction committed',
    );
  } finally {
    other.close();
    await writer.destroy();
    await reader.destroy();
    raw.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
