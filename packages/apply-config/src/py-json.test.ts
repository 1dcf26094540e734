import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isDict, parsePyJson, PyFloat, pyFloatRepr, pyJsonDumps, pyRepr, pyStr, pyTruthy, type PyValue } from './py-json.ts';

const roundTrip = (text: string): string => pyJsonDumps(parsePyJson(text));

test('objects keep file order, integer-like and __proto__ keys included', () => {
  const parsed = parsePyJson('{"b": 1, "1": 2, "__proto__": {"x": 1}, "a": 3}');
  assert.ok(isDict(parsed));
  assert.deepEqual([...parsed.keys()], ['b', '1', '__proto__', 'a']);
  assert.equal(roundTrip('{"b":1,"1":2}'), '{"b": 1, "1": 2}');
});

test('floats stay floats and big integers keep their digits, as json.dumps prints them', () => {
  assert.equal(
    roundTrip('[1, 1.0, -0.0, 1e16, 1E15, 0.0001, 0.00001, 123.456, 1.5e-7, 12345678901234567890123]'),
    '[1, 1.0, -0.0, 1e+16, 1000000000000000.0, 0.0001, 1e-05, 123.456, 1.5e-07, 12345678901234567890123]',
  );
  assert.equal(roundTrip('[NaN, Infinity, -Infinity, 1e400]'), '[NaN, Infinity, -Infinity, Infinity]');
  assert.ok(parsePyJson('2.5') instanceof PyFloat);
  assert.equal(parsePyJson('-0'), -0);
  assert.equal(roundTrip('-0'), '0');
});

test('float repr follows Python', () => {
  const cases: Array<[number, string]> = [
    [0.1, '0.1'],
    [1 / 3, '0.3333333333333333'],
    [1e22, '1e+22'],
    [1.5e300, '1.5e+300'],
    [5e-324, '5e-324'],
    [123456789.0, '123456789.0'],
    [-2.5e-5, '-2.5e-05'],
  ];
  for (const [value, repr] of cases) assert.equal(pyFloatRepr(value), repr, String(value));
});

test('strings are escaped as ensure_ascii does', () => {
  assert.equal(pyJsonDumps('é "q" \\ \n\t\u0001\u007f 😀 /'), '"\\u00e9 \\"q\\" \\\\ \\n\\t\\u0001\\u007f \\ud83d\\ude00 /"');
  assert.equal(parsePyJson('"\\u00e9\\/\\ud83d\\ude00"'), 'é/😀');
});

test('invalid JSON is refused the way json.loads refuses it', () => {
  for (const text of ['', '{', '{"a":1,}', '[1 2]', '"a\tb"', '"\\x"', "{'a': 1}", '01', '1 2', '\ufeff{}', 'nan', 'True']) {
    assert.throws(() => parsePyJson(text), /at char/, JSON.stringify(text));
  }
  assert.deepEqual(parsePyJson(' \n\t{ } \r\n'), new Map());
});

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
