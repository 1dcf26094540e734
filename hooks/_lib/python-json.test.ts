import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { pythonJson } from './python-json.ts';

// Keys and strings where JavaScript's defaults and Python's json differ: DEL, non-ASCII, an astral character
// (sorted after U+E000 by code point, before it by UTF-16 unit), nesting, and a list.
const value = {
  z: ['\u007f', 'é', null, true, 3],
  '\ue000': { b: 1, a: '\u{1F600}' },
  '\u{1F600}': 2,
  a: 'plain "quoted" \\ \n',
};

// Numbers where JavaScript's and Python's spellings differ (1e-7 / 1e-07, 0.00001 / 1e-05, -0 / -0.0,
// 1e+22 either way), with the integers as integer literals, as Python's json writes them, and integer-like
// keys, which JavaScript keeps first in an object whatever order it was built in.
const NUMBERS = `{"floats": [1e-05, 0.00001, 1e-7, 1.5e-07, 0.0001, 0.1, -0.0, 2.5, -1234.5678, 1e22, 1.5e300, 5e-324,
  1.7976931348623157e308, 0.30000000000000004], "ints": [0, -7, 10000000000000000, 123456789012345680000],
  "b": {"10": 1, "2": [], "a": {}}, "10": 0.5, "9": -0.0}`;

/** What python3's json.dumps(json.loads(text), indent=4) writes (the agents' reference behaviour). */
function python(text: string, sortKeys: boolean): string {
  const script = `import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin), indent=4${sortKeys ? ', sort_keys=True' : ''}))`;
  return execFileSync('python3', ['-c', script], { input: text, encoding: 'utf8' });
}

test('pythonJson writes what python3 json.dumps(indent=4, sort_keys=True) writes: code-point order, DEL and non-ASCII escaped', () => {
  assert.equal(pythonJson(value, { sortKeys: true }), python(JSON.stringify(value), true));
});

test('pythonJson without sortKeys keeps insertion order, as json.dumps(indent=4) does', () => {
  assert.equal(pythonJson(value), python(JSON.stringify(value), false));
  assert.equal(pythonJson(undefined), 'null');
});

test('pythonJson spells floats as Python does (1e-05, 1e-07, -0.0) and sorts integer-like keys as text', () => {
  const written = pythonJson(JSON.parse(NUMBERS), { sortKeys: true });
  assert.equal(written, python(NUMBERS, true));
  assert.match(written, /^ {8}1e-05,\n {8}1e-05,\n {8}1e-07,\n {8}1.5e-07,\n {8}0.0001,/m);
  assert.match(written, /^ {4}"10": 0.5,\n {4}"9": -0.0,\n {4}"b": \{\n {8}"10": 1,\n {8}"2": \[\],\n {8}"a": \{\}\n/m);
});

test('pythonJson writes non-finite numbers as Python does; a float with an integer value as that integer', () => {
  const script = "import json, sys; sys.stdout.write(json.dumps([float('nan'), float('inf'), -float('inf'), 1, 10**16], indent=4))";
  assert.equal(pythonJson([NaN, Infinity, -Infinity, 1.0, 1e16]), execFileSync('python3', ['-c', script], { encoding: 'utf8' }));
});
