import { test } from 'node:test';
import assert from 'node:assert/strict';
import { jsonEqual, pythonJsonDumps } from './python-json.ts';

// Expected texts printed by CPython 3.11's json.dumps for the same value.
const VALUE = { b: { z: [1, 2.5, -3], a: 'tab\there "q" \\ /' }, e: [], o: {}, u: 'café ☃ 😀 \u007f\u0001', n: null, t: true };

test('indent=1 output is byte-identical to Python json.dumps(value, indent=1)', () => {
  const expected = [
    '{',
    ' "b": {',
    '  "z": [',
    '   1,',
    '   2.5,',
    '   -3',
    '  ],',
    '  "a": "tab\\there \\"q\\" \\\\ /"',
    ' },',
    ' "e": [],',
    ' "o": {},',
    ' "u": "caf\\u00e9 \\u2603 \\ud83d\\ude00 \\u007f\\u0001",',
    ' "n": null,',
    ' "t": true',
    '}',
  ].join('\n');
  assert.equal(pythonJsonDumps(VALUE, 1), expected);
});

test('no indent uses Python separators ", " and ": "', () => {
  assert.equal(
    pythonJsonDumps(VALUE),
    '{"b": {"z": [1, 2.5, -3], "a": "tab\\there \\"q\\" \\\\ /"}, "e": [], "o": {}, "u": "caf\\u00e9 \\u2603 \\ud83d\\ude00 \\u007f\\u0001", "n": null, "t": true}',
  );
  assert.equal(pythonJsonDumps(['/x/a.json', '/x/b.json']), '["/x/a.json", "/x/b.json"]');
  assert.equal(pythonJsonDumps([]), '[]');
});

test('fractions are written as Python repr writes floats: exponent form below 1e-4, two exponent digits at least', () => {
  // Each pair: the number as read from JSON, and CPython's json.dumps of the same float.
  const cases: Array<[number, string]> = [
    [1.5e-7, '1.5e-07'],
    [0.00001, '1e-05'],
    [1e-6, '1e-06'],
    [-0.000012, '-1.2e-05'],
    [0.0001, '0.0001'],
    [0.000123, '0.000123'],
    [-2.5e-300, '-2.5e-300'],
    [5e-324, '5e-324'],
    [0.1, '0.1'],
    [12345678.5, '12345678.5'],
    [1e300, '1e+300'],
  ];
  for (const [value, python] of cases) assert.equal(pythonJsonDumps(value), python, String(value));
  assert.equal(pythonJsonDumps({ a: [1.5e-7] }, 1), '{\n "a": [\n  1.5e-07\n ]\n}');
});

test('jsonEqual compares like Python ==: key order ignored, list order and types kept', () => {
  assert.equal(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), true);
  assert.equal(jsonEqual({ a: [1, 2] }, { a: [2, 1] }), false);
  assert.equal(jsonEqual({ a: 1 }, { a: 1, b: undefined }), false);
  assert.equal(jsonEqual([], {}), false);
  assert.equal(jsonEqual('1', 1), false);
  assert.equal(jsonEqual(null, {}), false);
});
