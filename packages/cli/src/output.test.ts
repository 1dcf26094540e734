import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOutput, displayValue, formatFields, formatJson, formatTable } from './output.ts';

test('formatTable aligns columns, upper-cases headers and leaves no trailing spaces', () => {
  const rows = [
    { id: 'a1', name: 'web-1', seen: null },
    { id: 'b22222', name: 'db', seen: '2026-01-01T00:00:00Z' },
  ];
  const text = formatTable(
    [
      { header: 'id', value: (r: (typeof rows)[number]) => r.id },
      { header: 'name', value: (r) => r.name },
      { header: 'last seen', value: (r) => r.seen },
    ],
    rows,
  );
  assert.equal(text, ['ID      NAME   LAST SEEN', 'a1      web-1  -', 'b22222  db     2026-01-01T00:00:00Z', ''].join('\n'));
});

test('formatTable with no rows prints the header only; cells lose their newlines', () => {
  assert.equal(formatTable([{ header: 'id', value: (r: string) => r }], []), 'ID\n');
  assert.equal(formatTable([{ header: 'm', value: (r: string) => r }], ['a\nb']), 'M\na b\n');
});

test('formatTable lines columns up by terminal width with wide, combining and zero-width characters', () => {
  const rows = ['日本語', '👍ok', 'e\u0301t\u00e9', 'a\u200bb', 'plain'];
  const text = formatTable(
    [
      { header: 'name', value: (r: string) => r },
      { header: 'x', value: () => 'X' },
    ],
    rows,
  );
  assert.equal(text, ['NAME    X', '日本語  X', '👍ok    X', 'e\u0301t\u00e9     X', 'a\u200bb      X', 'plain   X', ''].join('\n'));
});

test('formatTable and formatFields show escape sequences in server text escaped, never raw', () => {
  const name = 'evil\x1b[2J\x1b]0;title\x07\u009b31m\u202eTXT';
  const table = formatTable(
    [
      { header: 'name', value: (r: string) => r },
      { header: 'x', value: () => 'X' },
    ],
    [name, 'ok'],
  );
  const shown = 'evil\\x1b[2J\\x1b]0;title\\x07\\x9b31m\\u202eTXT';
  assert.equal(table, [`${'NAME'.padEnd(shown.length)}  X`, `${shown}  X`, `${'ok'.padEnd(shown.length)}  X`, ''].join('\n'));
  const fields = formatFields([
    ['name', name],
    ['config', '#!/bin/sh\n\techo \x1b[31mhi\r\n'],
    ['sig\x1bnal', 1],
  ]);
  assert.equal(
    fields,
    [
      'name:       evil\\x1b[2J\\x1b]0;title\\x07\\x9b31m\\u202eTXT',
      'config:',
      '  #!/bin/sh',
      '  \techo \\x1b[31mhi\\r',
      'sig\\x1bnal: 1',
      '',
    ].join('\n'),
  );
  // Only the config body's newlines and tab are left.
  assert.doesNotMatch(table + fields, /(?![\n\t])[\p{Cc}\u202e]/u);
});

test('formatFields aligns values and puts multi-line values below their key', () => {
  const text = formatFields([
    ['id', 'x'],
    ['status_reason', null],
    ['config', '#!/bin/sh\necho hi\n'],
    ['inputs', { a: 1 }],
  ]);
  assert.equal(
    text,
    ['id:            x', 'status_reason: -', 'config:', '  #!/bin/sh', '  echo hi', 'inputs:        {"a":1}', ''].join('\n'),
  );
});

test('displayValue shows null as -, strings raw, the rest as JSON', () => {
  assert.equal(displayValue(undefined), '-');
  assert.equal(displayValue('s'), 's');
  assert.equal(displayValue(3), '3');
  assert.equal(displayValue([1, 'a']), '[1,"a"]');
});

test('an Output writes only the JSON document with --json, and notes go to stderr', () => {
  let stdout = '';
  let stderr = '';
  const sinks = [{ write: (t: string) => (stdout += t) }, { write: (t: string) => (stderr += t) }] as const;
  const json = createOutput(true, ...sinks);
  json.line('human only');
  json.note('a note');
  json.result({ a: 1 }, () => 'human');
  assert.equal(stdout, formatJson({ a: 1 }));
  assert.equal(stderr, 'a note\n');
  stdout = '';
  const human = createOutput(false, ...sinks);
  human.result({ a: 1 }, () => 'human\n');
  human.line('more');
  assert.equal(stdout, 'human\nmore\n');
});
