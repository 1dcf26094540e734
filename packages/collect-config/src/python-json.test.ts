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

test('jsonEqual compares like Python ==: key order ignored, list order and types kept', () => {
  assert.equal(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), true);
  assert.equal(jsonEqual({ a: [1, 2] }, { a: [2, 1] }), false);
  assert.equal(jsonEqual({ a: 1 }, { a: 1, b: undefined }), false);
  assert.equal(jsonEqual([], {}), false);
  assert.equal(jsonEqual('1', 1), false);
  assert.equal(jsonEqual(null, {}), false);
});
