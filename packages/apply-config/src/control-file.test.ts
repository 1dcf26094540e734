import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileControl, parseControlYaml, readFileControl, resolveYamlScalar } from './control-file.ts';

const control = (text: string) => fileControl(parseControlYaml(text, 'x.oac'));

test('YAML 1.1 scalars as PyYAML resolves them', () => {
  assert.equal(resolveYamlScalar('0644'), 0o644);
  assert.equal(resolveYamlScalar('644'), 644);
  assert.equal(resolveYamlScalar('0x1f'), 31);
  assert.equal(resolveYamlScalar('0b101'), 5);
  assert.equal(resolveYamlScalar('1:30'), 90);
  assert.equal(resolveYamlScalar('yes'), true);
  assert.equal(resolveYamlScalar('Off'), false);
  assert.equal(resolveYamlScalar('~'), null);
  assert.deepEqual(resolveYamlScalar('1.5'), { float: '1.5' });
  assert.equal(resolveYamlScalar('root'), 'root');
});

test('a control file sets mode, owner, group and allow_empty', () => {
  assert.deepEqual(control('---\n# comment\nmode: 0600 # octal\nallow_empty: no\nowner: root\ngroup: 0\n'), {
    allowEmpty: false,
    mode: 0o600,
    uid: 0,
    gid: 0,
  });
  assert.deepEqual(control(''), { allowEmpty: true });
});

test('a mapping indented as a whole reads as PyYAML reads it; keys at two columns do not', () => {
  assert.deepEqual(control('  # indented\n  mode: 0600\n\n  allow_empty: false\n'), { allowEmpty: false, mode: 0o600 });
  assert.throws(() => control('  mode: 0600\nallow_empty: false\n'), /unsupported YAML line/);
  assert.throws(() => control('mode: 0600\n  allow_empty: false\n'), /unsupported YAML line/);
  assert.throws(() => control('  just a string\n'), /header is not a dict/);
});

test('bad control files fail with the original messages', () => {
  assert.throws(() => control('mode: 644\n'), /mode '0o1204' out of range/);
  assert.throws(() => control('mode: rw\n'), /mode 'rw' is not numeric/);
  assert.throws(() => control('mode: 1.5\n'), /mode '1.5' is not numeric/);
  assert.throws(() => control('allow_empty: 1\n'), /allow_empty requires Boolean, got: '1'/);
  assert.throws(() => control('colour: red\n'), /unrecognised file control key 'colour'/);
  assert.throws(() => control('owner: no-such-user-hearth\n'), /owner 'no-such-user-hearth' not found in passwd database/);
  assert.throws(() => control('group: 4000000\n'), /group '4000000' not found in group database/);
  assert.throws(() => control('owner: true\n'), /owner 'True' must be a string or int/);
  // A quoted number is a name, as for getpwnam: no user is called '0'.
  assert.throws(() => control("owner: '0'\n"), /owner '0' not found in passwd database/);
  assert.throws(() => control("group: '0'\n"), /group '0' not found in group database/);
  assert.throws(() => control('just a string\n'), /header is not a dict/);
  assert.throws(() => control('mode: {a: 1}\n'), /unsupported YAML value/);
});

test('readFileControl: no file means the defaults', () => {
  const dir = mkdtempSync(join(tmpdir(), 'apply-config-oac-'));
  assert.deepEqual(readFileControl(join(dir, 'none.oac')), { allowEmpty: true });
  writeFileSync(join(dir, 'f.oac'), 'mode: 0640\n');
  assert.deepEqual(readFileControl(join(dir, 'f.oac')), { allowEmpty: true, mode: 0o640 });
});
