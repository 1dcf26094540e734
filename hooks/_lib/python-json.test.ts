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

/** What python3's json.dumps writes for `value` (the agents' reference behaviour). */
function python(sortKeys: boolean): string {
  const script = `import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin), indent=4${sortKeys ? ', sort_keys=True' : ''}))`;
  return execFileSync('python3', ['-c', script], { input: JSON.stringify(value), encoding: 'utf8' });
}

test('pythonJson writes what python3 json.dumps(indent=4, sort_keys=True) writes: code-point order, DEL and non-ASCII escaped', () => {
  assert.equal(pythonJson(value, { sortKeys: true }), python(true));
});

test('pythonJson without sortKeys keeps insertion order, as json.dumps(indent=4) does', () => {
  assert.equal(pythonJson(value), python(false));
  assert.equal(pythonJson(undefined), 'null');
});
