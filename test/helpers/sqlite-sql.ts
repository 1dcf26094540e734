// A SQLite database as SQL text, and back: fixtures are kept as reviewable text, never as database
// files. Unlike the sqlite3 shell's .dump, text holding a NUL keeps it (as CAST(X'..' AS TEXT)).
import Database from 'better-sqlite3';

/** The SQL that rebuilds the database at `file`: its tables and indexes, then every row. */
export function dumpSql(file: string): string {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const objects = db
      .prepare(
        "select type, name, sql from sqlite_master where sql is not null and name not like 'sqlite_%' order by type = 'table' desc, rowid",
      )
      .all() as Array<{ type: string; name: string; sql: string }>;
    const lines = ['PRAGMA foreign_keys=OFF;', 'BEGIN;'];
    for (const { type, sql } of objects) if (type === 'table') lines.push(`${sql};`);
    for (const { type, name, sql } of objects) {
      if (type !== 'table') continue;
      const columns = (db.prepare(`select name from pragma_table_info(?) order by cid`).all(name) as Array<{ name: string }>).map(
        (c) => c.name,
      );
      const quoted = columns.map((c) => `"${c.replaceAll('"', '""')}"`);
      const literal = quoted.map(
        (c) =>
          `case when typeof(${c}) = 'text' and instr(${c}, char(0)) > 0 then 'CAST(X''' || hex(${c}) || ''' AS TEXT)' else quote(${c}) end`,
      );
      const table = `"${name.replaceAll('"', '""')}"`;
      // A WITHOUT ROWID table (signals, since 0013) is read in the order of its primary key.
      const order = /\bwithout\s+rowid\b/i.test(sql) ? '' : ' order by rowid';
      for (const row of db.prepare(`select ${literal.join(" || ',' || ")} as v from ${table}${order}`).all() as Array<{
        v: string;
      }>) {
        lines.push(`INSERT INTO ${table} (${quoted.join(',')}) VALUES(${row.v});`);
      }
    }
    // AUTOINCREMENT's counters: the next id stays what it was, even where the last rows were deleted.
    const hasSequence = db.prepare("select 1 from sqlite_master where name = 'sqlite_sequence'").get() !== undefined;
    if (hasSequence) {
      lines.push('DELETE FROM sqlite_sequence;');
      for (const row of db.prepare("select quote(name) || ',' || quote(seq) as v from sqlite_sequence order by rowid").all() as Array<{
        v: string;
      }>) {
        lines.push(`INSERT INTO sqlite_sequence VALUES(${row.v});`);
      }
    }
    for (const { type, sql } of objects) if (type !== 'table') lines.push(`${sql};`);
    lines.push('COMMIT;');
    return `${lines.join('\n')}\n`;
  } finally {
    db.close();
  }
}

/** Creates the database at `file` from dumpSql's text. */
export function loadSql(text: string, file: string): void {
  const db = new Database(file);
  try {
    db.exec(text);
  } finally {
    db.close();
  }
}
