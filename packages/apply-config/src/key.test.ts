import { test } from 'node:test';
import assert from 'node:assert/strict';
import { booleanKeyExitCode, extractKey, keyOutput } from './key.ts';
import { parsePyJson, pyJsonDumps, type PyDict } from '@hearth/agent-kit/python-json';

const config = parsePyJson(
  '{"a": {"b": [{"c": "x"}, {"c": "y"}], "n": null, "f": 1.0, "t": true, "s": "str\\n", "i": 7}, "1": "one", "no": false, "dict": {"k": [1, 2]}}',
) as PyDict;

test('extractKey walks dicts and lists (negative and spaced indexes too); null counts as missing', () => {
  assert.equal(extractKey(config, 'a.b.1.c'), 'y');
  assert.equal(extractKey(config, 'a.b.-1.c'), 'y');
  assert.equal(extractKey(config, 'a.b. 0 .c'), 'x');
  assert.equal(extractKey(config, '1'), 'one');
  assert.equal(extractKey(config, 'a.b.2'), undefined);
  assert.equal(extractKey(config, 'a.b.x'), undefined);
  assert.equal(extractKey(config, 'a.n'), undefined);
  assert.equal(extractKey(config, 'a.s.0'), undefined);
  assert.equal(extractKey(config, 'missing'), undefined);
});

test('keyOutput prints scalars as str() and containers and booleans as JSON, after the type check', () => {
  assert.equal(keyOutput(config, 'a.i', 'int', undefined, []), '7');
  assert.equal(keyOutput(config, 'a.t', 'default', undefined, []), 'true');
  assert.equal(keyOutput(config, 'a.f', 'netaddress', undefined, []), '1.0');
  assert.equal(keyOutput(config, 'a.s', 'default', undefined, []), 'str\n');
  assert.equal(keyOutput(config, 'dict', 'raw', undefined, []), '{"k": [1, 2]}');
  assert.throws(() => keyOutput(config, 'dict', 'default', undefined, []), /cannot interpret value '\{'k': \[1, 2\]\}' as type default/);
  assert.throws(() => keyOutput(config, 'a.f', 'int', undefined, []), /cannot interpret value '1.0' as type int/);
});

test('a missing key prints the default unchecked, or fails naming the files', () => {
  assert.equal(keyOutput(config, 'nope', 'int', 'not-an-int', []), 'not-an-int');
  assert.equal(keyOutput(config, 'a.n', 'default', '', []), '');
  assert.throws(
    () => keyOutput(config, 'nope', 'raw', undefined, ['/a.json', '/b.json']),
    /key nope does not exist in \['\/a.json', '\/b.json'\]/,
  );
});

test('booleanKeyExitCode: 0 true, 1 false, 255 otherwise', () => {
  assert.equal(booleanKeyExitCode(config, 'a.t'), 0);
  assert.equal(booleanKeyExitCode(config, 'no'), 1);
  assert.equal(booleanKeyExitCode(config, 'a.i'), 255);
  assert.equal(booleanKeyExitCode(config, 'missing'), 255);
  assert.equal(pyJsonDumps(config.get('no') ?? null), 'false');
});
