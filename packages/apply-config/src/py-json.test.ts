import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePyJson, PyFloat, type PyValue } from '@hearth/agent-kit/python-json';
import { pyRepr, pyStr, pyTruthy } from './py-json.ts';

test('str(), repr() and truthiness as Python', () => {
  const value = parsePyJson('{"a": [true, null, 1.0, "it\'s"], "b": "x"}');
  assert.equal(pyStr(value), `{'a': [True, None, 1.0, "it's"], 'b': 'x'}`);
  assert.equal(pyStr('plain'), 'plain');
  assert.equal(pyRepr('a\nb'), "'a\\nb'");
  const falsy: PyValue[] = [null, false, 0, new PyFloat(0), '', [], new Map()];
  for (const item of falsy) assert.equal(pyTruthy(item), false, pyStr(item));
  const truthy: PyValue[] = [true, 1, new PyFloat(NaN), ' ', [null], new Map([['a', null]])];
  for (const item of truthy) assert.equal(pyTruthy(item), true, pyStr(item));
});
