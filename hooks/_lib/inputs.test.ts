import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PyBigInt, PyFloat, pyJsonDumps } from '@hearth/agent-kit/python-json';
import { convertInput, inputEnv, inputValue, inputValues, stringify } from './inputs.ts';
import type { Deployment } from './deployment.ts';

test('String inputs: scalars as a user writes them, not Python repr', () => {
  assert.equal(convertInput('String', 'x'), 'x');
  assert.equal(convertInput('String', true), 'true');
  assert.equal(convertInput('String', 3), '3');
  assert.equal(convertInput('String', null), '');
  assert.equal(convertInput('String', undefined), '');
  assert.equal(convertInput('String', { a: 1 }), '{"a":1}');
  assert.equal(convertInput('String', ['a']), '["a"]');
});

test('Number, Boolean, Json and CommaDelimitedList convert text, and keep what does not fit', () => {
  assert.equal(convertInput('Number', ' 4.5 '), 4.5);
  assert.equal(convertInput('Number', 7), 7);
  assert.equal(convertInput('Number', 'seven'), 'seven');
  assert.equal(convertInput('Number', ''), '');
  assert.equal(convertInput('Boolean', 'Yes'), true);
  assert.equal(convertInput('Boolean', 'off'), false);
  assert.equal(convertInput('Boolean', 0), false);
  assert.equal(convertInput('Boolean', 'maybe'), 'maybe');
  assert.deepEqual(convertInput('Json', '{"a":[1]}'), { a: [1] });
  assert.equal(convertInput('Json', '{bad'), '{bad');
  assert.deepEqual(convertInput('Json', { b: 2 }), { b: 2 });
  assert.deepEqual(convertInput('CommaDelimitedList', 'a, b ,c'), ['a', 'b', 'c']);
  assert.deepEqual(convertInput('CommaDelimitedList', ''), []);
  assert.deepEqual(convertInput('CommaDelimitedList', ['x']), ['x']);
  assert.deepEqual(convertInput('CommaDelimitedList', 5), ['5']);
  assert.deepEqual(convertInput('Weird', { k: 1 }), { k: 1 });
  assert.equal(convertInput('Weird', undefined), null);
});

const deployment = (inputs: Deployment['inputs']): Deployment => ({
  id: 'd',
  name: 'd',
  group: 'script',
  creationTime: '',
  config: null,
  inputs,
  outputs: [],
  options: {},
});

test('inputEnv: strings as-is, others JSON; credentials hidden unless asked; impossible names and values skipped', () => {
  const d = deployment([
    { name: 'foo', type: 'String', value: 'bar baz' },
    { name: 'count', type: 'Number', value: 3 },
    { name: 'flag', type: 'Boolean', value: false },
    { name: 'list', type: 'CommaDelimitedList', value: ['a', 'b'] },
    { name: 'data', type: 'Json', value: { k: [1] } },
    { name: 'nothing', type: 'Json', value: null },
    { name: 'deploy_password', type: 'String', value: 'pw' },
    { name: 'deploy_signal_id', type: 'String', value: 'http://127.0.0.1/sig?Signature=x' },
    { name: 'a=b', type: 'String', value: 'x' },
    { name: 'nul', type: 'String', value: 'a\0b' },
  ]);
  const { env, skipped } = inputEnv(d);
  assert.deepEqual(env, { foo: 'bar baz', count: '3', flag: 'false', list: '["a","b"]', data: '{"k":[1]}', nothing: '' });
  assert.equal(skipped.length, 2);
  assert.match(skipped[0]!, /"a=b"/);
  assert.match(skipped[1]!, /NUL/);
  const withCredentials = inputEnv(d, { includeCredentials: true }).env;
  assert.equal(withCredentials.deploy_password, 'pw');
  assert.equal(withCredentials.deploy_signal_id, 'http://127.0.0.1/sig?Signature=x');
});

test('inputValues and inputValue: the last input of a name wins', () => {
  const d = deployment([
    { name: 'x', type: 'String', value: '1' },
    { name: 'x', type: 'String', value: '2' },
  ]);
  assert.deepEqual(inputValues(d), { x: '2' });
  assert.equal(inputValue(d, 'x'), '2');
  assert.equal(inputValue(d, 'y'), undefined);
  assert.equal(stringify(undefined), '');
});

test('a Json input given as text is read as json.loads does: 1.0 stays a float, big integers keep every digit', () => {
  const value = convertInput('Json', '{"f": 1.0, "e": 1E16, "big": 12345678901234567890, "NaN": NaN}');
  assert.equal(pyJsonDumps(value), '{"f": 1.0, "e": 1e+16, "big": 12345678901234567890, "NaN": NaN}');
  assert.equal(stringify(new PyBigInt(12345678901234567890n)), '12345678901234567890');
  assert.equal(stringify(new PyFloat(1)), '1.0');
  assert.equal(convertInput('String', new PyBigInt(12345678901234567890n)), '12345678901234567890');
});
