import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IniParseError, iniValue, loadIniFiles, osloInterpolate, parseIni } from './ini.ts';

/** An IniDocument as plain objects, for deepEqual. */
function plain(document: Map<string, Map<string, string[]>>): Record<string, Record<string, string[]>> {
  return Object.fromEntries([...document].map(([section, keys]) => [section, Object.fromEntries(keys)]));
}

test('parses an os-collect-config.conf as Heat renders it', () => {
  const text = `[DEFAULT]
command = os-refresh-config
polling_interval = 30
collectors = ec2
collectors = heat
collectors = local

[heat]
auth_url = http://127.0.0.1:5000/v3
user_id = 0f1e
password = p@ss=word:with;chars # not a comment
project_id = 9a8b
stack_id = stack/2c3d
resource_name = server
`;
  assert.deepEqual(plain(parseIni(text)), {
    DEFAULT: { command: ['os-refresh-config'], polling_interval: ['30'], collectors: ['ec2', 'heat', 'local'] },
    heat: {
      auth_url: ['http://127.0.0.1:5000/v3'],
      user_id: ['0f1e'],
      password: ['p@ss=word:with;chars # not a comment'],
      project_id: ['9a8b'],
      stack_id: ['stack/2c3d'],
      resource_name: ['server'],
    },
  });
});

test('keys before any section go to DEFAULT; colon separators, comments, quotes, empty values', () => {
  const text = `# leading comment
top = 1
; another comment
[cfn]
metadata_url: http://h:8000/v1/
path = "server.Metadata"
stack_name = 'quoted'
mismatched = "half'
empty =
  # indented comment
[cfn]
path = second.Metadata
`;
  assert.deepEqual(plain(parseIni(text)), {
    DEFAULT: { top: ['1'] },
    cfn: {
      metadata_url: ['http://h:8000/v1/'],
      path: ['server.Metadata', 'second.Metadata'],
      stack_name: ['quoted'],
      mismatched: [`"half'`],
      empty: [''],
    },
  });
});

test('indented lines continue the previous value; CRLF and a BOM are accepted', () => {
  const document = parseIni('\uFEFF[a]\r\nkey = first\r\n  second\r\n\tthird\r\nnext = x\r\n');
  assert.deepEqual(plain(document), { a: { key: ['first\nsecond\nthird'], next: ['x'] } });
});

test('lines it cannot read fail with the line number', () => {
  assert.throws(
    () => parseIni('[ok]\nkey = v\njust words\n', '/etc/x.conf'),
    (error: unknown) => {
      assert.ok(error instanceof IniParseError);
      assert.equal(error.line, 3);
      assert.equal(error.file, '/etc/x.conf');
      assert.match(error.message, /^\/etc\/x\.conf:3: expected "key = value", got "just words"$/);
      return true;
    },
  );
  assert.throws(() => parseIni('[unterminated\n'), /bad section header/);
  assert.throws(() => parseIni('[]\n'), /bad section header/);
  assert.throws(() => parseIni('= value\n'), IniParseError);
});

test('iniValue gives the last value of a key', () => {
  const document = parseIni('[s]\nk = 1\nk = 2\n');
  assert.equal(iniValue(document, 's', 'k'), '2');
  assert.equal(iniValue(document, 's', 'missing'), undefined);
  assert.equal(iniValue(document, 'nope', 'k'), undefined);
});

test('loadIniFiles merges key by key, later files winning, and skips missing files', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-kit-ini-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'a.conf'), '[DEFAULT]\ncollectors = ec2\ncollectors = cfn\ncommand = a\n[cfn]\npath = x.Metadata\n');
  writeFileSync(join(dir, 'b.conf'), '[DEFAULT]\ncollectors = heat\n[heat]\nuser_id = u\n');
  const document = loadIniFiles([join(dir, 'a.conf'), join(dir, 'missing.conf'), join(dir, 'b.conf')]);
  assert.deepEqual(plain(document), {
    DEFAULT: { collectors: ['heat'], command: ['a'] },
    cfn: { path: ['x.Metadata'] },
    heat: { user_id: ['u'] },
  });
  assert.equal(loadIniFiles([join(dir, 'none.conf')]).size, 0);
});

test('loadIniFiles reports unreadable files and bad syntax with the file name', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'agent-kit-ini-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'a-dir.conf'));
  assert.throws(
    () => loadIniFiles([join(dir, 'a-dir.conf')]),
    (error: NodeJS.ErrnoException) => error.code === 'EISDIR',
  );
  writeFileSync(join(dir, 'bad.conf'), '[x]\nnonsense\n');
  assert.throws(() => loadIniFiles([join(dir, 'bad.conf')]), new RegExp(`${join(dir, 'bad.conf')}:2:`));
});

test('osloInterpolate expands $name, ${name}, ${group.name} and $$', () => {
  const values: Record<string, string> = { host: '127.0.0.1', port: '8000', 'heat.auth_url': 'http://ks/v3' };
  const lookup = (name: string): string | undefined => values[name];
  assert.equal(osloInterpolate('http://$host:${port}/v1/', lookup), 'http://127.0.0.1:8000/v1/');
  assert.equal(osloInterpolate('${heat.auth_url}/auth', lookup), 'http://ks/v3/auth');
  assert.equal(osloInterpolate('cost $$5 and $$host', lookup), 'cost $5 and $host');
  assert.equal(osloInterpolate('no references', lookup), 'no references');
});

test('osloInterpolate leaves unknown names and lone dollars as written', () => {
  const lookup = (name: string): string | undefined => (name === 'known' ? 'K' : undefined);
  assert.equal(osloInterpolate('$unknown ${also.unknown} $known', lookup), '$unknown ${also.unknown} K');
  assert.equal(osloInterpolate('price: 5$ or $1 or ${}', lookup), 'price: 5$ or $1 or ${}');
  const asked: string[] = [];
  osloInterpolate('$a_b1.c', (name) => {
    asked.push(name);
    return undefined;
  });
  assert.deepEqual(asked, ['a_b1'], 'a bare name stops at the dot');
});

test('stripQuotes: false keeps quoted values whole, as Python ConfigParser does', () => {
  const text = '[s]\na = "x" -y "z"\nb = \'q\'\n';
  assert.deepEqual(iniValue(parseIni(text), 's', 'a'), 'x" -y "z');
  assert.deepEqual(iniValue(parseIni(text, 'f', { stripQuotes: false }), 's', 'a'), '"x" -y "z"');
  assert.deepEqual(iniValue(parseIni(text, 'f', { stripQuotes: false }), 's', 'b'), "'q'");
});
