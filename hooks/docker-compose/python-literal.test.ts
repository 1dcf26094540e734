import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePythonLiteral } from './python-literal.ts';

test('parses what ast.literal_eval reads: quotes, escapes, numbers, True/False/None, lists, tuples, dicts', () => {
  assert.deepEqual(parsePythonLiteral(`[{'file_name': 'a.env', "content": 'X=1\\nY=\\'2\\''}]`), [
    { file_name: 'a.env', content: "X=1\nY='2'" },
  ]);
  assert.deepEqual(parsePythonLiteral(' (1, -2.5, 3e2, True, False, None,) '), [1, -2.5, 300, true, false, null]);
  assert.deepEqual(parsePythonLiteral('{}'), {});
  assert.deepEqual(parsePythonLiteral('[]'), []);
});

test('anything else is a SyntaxError with the offset', () => {
  assert.throws(() => parsePythonLiteral('[1 2]'), /expected , or \] at offset 3/);
  assert.throws(() => parsePythonLiteral("'open"), /unterminated string/);
  assert.throws(() => parsePythonLiteral('os.system("x")'), /unexpected character at offset 0/);
  assert.throws(() => parsePythonLiteral('[1] 2'), /unexpected text after the value/);
  assert.throws(() => parsePythonLiteral('{1 2}'), /expected :/);
});
