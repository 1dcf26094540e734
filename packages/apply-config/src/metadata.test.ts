import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collectConfig, deepMerge, loadFileList, subhash } from './metadata.ts';
import { parsePyJson, pyJsonDumps, type PyDict } from '@hearth/agent-kit/python-json';

const json = (text: string) => parsePyJson(text);
const dir = mkdtempSync(join(tmpdir(), 'apply-config-metadata-'));
const file = (name: string, text: string): string => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};

test('deep merge: dicts merge recursively, lists and scalars are replaced, key order kept', () => {
  const merged = deepMerge(
    json('{"a": {"x": 1, "y": [1, 2]}, "b": 1, "c": {"k": 1}}'),
    json('{"a": {"y": [3], "z": 2}, "c": 5, "d": {"e": null}}'),
  );
  assert.equal(pyJsonDumps(merged), '{"a": {"x": 1, "y": [3], "z": 2}, "b": 1, "c": 5, "d": {"e": null}}');
  assert.equal(pyJsonDumps(deepMerge(json('{"a": 1}'), json('[1]'))), '[1]');
  assert.equal(pyJsonDumps(deepMerge(json('{"a": 1}'), json('{"a": {"b": 1}}'))), '{"a": {"b": 1}}');
});

test('collectConfig reads fallback files first, skips missing and empty names, ignores non-dict documents', () => {
  const fallback = file('fallback.json', '{"deployments": [{"name": "old"}], "keep": true}');
  const first = file('first.json', '{"deployments": [{"name": "a"}], "os-collect-config": {"collectors": ["ec2"]}}');
  const second = file('second.json', '{"os-collect-config": {"heat": {"auth_url": "http://127.0.0.1:5000/v3"}}}');
  const list = file('list.json', '[1, 2]');
  const config = collectConfig(['', first, join(dir, 'missing.json'), list, second], [fallback]);
  assert.equal(
    pyJsonDumps(config),
    '{"deployments": [{"name": "a"}], "keep": true, "os-collect-config": {"collectors": ["ec2"], "heat": {"auth_url": "http://127.0.0.1:5000/v3"}}}',
  );
  assert.equal(collectConfig([]).size, 0);
});

test('an invalid metadata file is an error naming the file', () => {
  const bad = file('bad.json', '{"a": ');
  assert.throws(
    () => collectConfig([bad]),
    (error: Error) => error.message === `Could not parse metadata file: ${bad}`,
  );
});

test('loadFileList: a missing file is empty; anything but a list of names is an error', () => {
  assert.deepEqual(loadFileList(join(dir, 'nope.json')), []);
  assert.deepEqual(loadFileList(file('ok.json', '["/a.json", "/b.json"]')), ['/a.json', '/b.json']);
  assert.throws(() => loadFileList(file('dict.json', '{}')), /No list defined in json file/);
  assert.throws(() => loadFileList(file('ints.json', '[1]')), /1 is not a file name/);
});

test('subhash narrows to a nested dict and refuses anything else', () => {
  const config = json('{"a": {"b": {"c": 1}, "l": [1]}}') as PyDict;
  assert.equal(pyJsonDumps(subhash(config, 'a.b')), '{"c": 1}');
  assert.equal(subhash(config, undefined), config);
  assert.throws(() => subhash(config, 'a.l'), /key 'a.l' does not correspond to a hash/);
  assert.throws(() => subhash(config, 'x'), /key 'x' does not correspond to a hash/);
});
