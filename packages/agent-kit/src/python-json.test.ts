import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { pyFloatRepr } from './python-float.ts';
import { jsonEqual } from './python-equal.ts';
import { isDict, jsNumbers, parsePyJson, PyBigInt, PyFloat, pyJsonDumps, pyPlainData, type PyJsonDumpsOptions } from './python-json.ts';

const roundTrip = (text: string, options?: PyJsonDumpsOptions): string => pyJsonDumps(parsePyJson(text), options);

/** What python3 writes for json.dumps(json.loads(text), **kwargs): the reference every agent matches. */
function python(text: string, kwargs: string): string {
  const script = `import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin)${kwargs}))`;
  return execFileSync('python3', ['-c', script], { input: text, encoding: 'utf8' });
}

const SAMPLE = `{"z": [1, 1.0, -0.0, 1e16, 1E15, 0.0001, 0.00001, 123.456, 1.5e-7, 12345678901234567890123, -0, NaN, -Infinity],
  "\\ue000": {"b": "\\u00e9 \\ud83d\\ude00 \\u007f \\u0001 \\"q\\" \\\\ /", "a": []}, "\\ud83d\\ude00": {}, "10": true, "9": null, "__proto__": 2}`;

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
  // Python's int has no negative zero.
  assert.equal(parsePyJson('-0'), 0);
  assert.equal(roundTrip('-0'), '0');
});

test('every option combination writes what python3 json.dumps writes, byte for byte', () => {
  const cases: Array<[PyJsonDumpsOptions, string]> = [
    [{}, ''],
    [{ indent: 1 }, ', indent=1'],
    [{ indent: 4, sortKeys: true }, ', indent=4, sort_keys=True'],
    [{ sortKeys: true }, ', sort_keys=True'],
    [{ ensureAscii: false }, ', ensure_ascii=False'],
    [{ indent: 2, ensureAscii: false }, ', indent=2, ensure_ascii=False'],
  ];
  for (const [options, kwargs] of cases) assert.equal(roundTrip(SAMPLE, options), python(SAMPLE, kwargs), kwargs);
  // Plain data as pyPlainData makes it sorts the same: integer-like keys by code point, not first.
  assert.equal(pyJsonDumps(pyPlainData(parsePyJson(SAMPLE)), { indent: 4, sortKeys: true }), python(SAMPLE, ', indent=4, sort_keys=True'));
});

test('ensure_ascii=False writes text as is, but a lone surrogate (which UTF-8 cannot hold) as its escape', () => {
  assert.equal(
    pyJsonDumps(['é 😀 \u007f \t', '\ud83d', 'a\ude00b'], { ensureAscii: false }),
    '["é 😀 \u007f \\t", "\\ud83d", "a\\ude00b"]',
  );
});

test('plain JavaScript data: fractions and -0 as Python floats, undefined as JSON.stringify leaves it', () => {
  const cases: Array<[number, string]> = [
    [1.5e-7, '1.5e-07'],
    [0.00001, '1e-05'],
    [-0.000012, '-1.2e-05'],
    [0.0001, '0.0001'],
    [5e-324, '5e-324'],
    [12345678.5, '12345678.5'],
    [1e300, '1e+300'],
    [-0, '-0.0'],
    [1, '1'],
  ];
  for (const [value, written] of cases) assert.equal(pyJsonDumps(value), written, String(value));
  assert.equal(
    pyJsonDumps({ a: [1.5e-7, undefined], b: undefined, c: {} }, { indent: 1 }),
    '{\n "a": [\n  1.5e-07,\n  null\n ],\n "c": {}\n}',
  );
  assert.equal(pyJsonDumps(undefined), 'null');
  assert.equal(pyJsonDumps({ 'b.c': { d: [1, 'é'] }, n: null }), '{"b.c": {"d": [1, "\\u00e9"]}, "n": null}');
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

test('strings are read and escaped as json does (ensure_ascii, DEL included)', () => {
  assert.equal(pyJsonDumps('é "q" \\ \n\t\u0001\u007f 😀 /'), '"\\u00e9 \\"q\\" \\\\ \\n\\t\\u0001\\u007f \\ud83d\\ude00 /"');
  assert.equal(parsePyJson('"\\u00e9\\/\\ud83d\\ude00"'), 'é/😀');
});

test('invalid JSON is refused the way json.loads refuses it', () => {
  for (const text of ['', '{', '{"a":1,}', '[1 2]', '"a\tb"', '"\\x"', "{'a': 1}", '01', '1 2', '\ufeff{}', 'nan', 'True']) {
    assert.throws(() => parsePyJson(text), /at char/, JSON.stringify(text));
  }
  assert.deepEqual(parsePyJson(' \n\t{ } \r\n'), new Map());
});

test('pyPlainData: objects with own keys, PyFloat and PyBigInt that JSON.stringify as JSON.parse read them; jsNumbers undoes the wrappers', () => {
  const text = '{"f": 1.0, "big": 12345678901234567890, "__proto__": [2.5, -0.0], "i": 7}';
  const plain = pyPlainData(parsePyJson(text)) as Record<string, unknown>;
  assert.ok(Object.hasOwn(plain, '__proto__') && Object.getPrototypeOf(plain) === Object.prototype);
  assert.deepEqual(plain.f, new PyFloat(1));
  assert.deepEqual(plain.big, new PyBigInt(12345678901234567890n));
  assert.equal(JSON.stringify(plain), JSON.stringify(JSON.parse(text)));
  assert.equal(pyJsonDumps(plain), '{"f": 1.0, "big": 12345678901234567890, "__proto__": [2.5, -0.0], "i": 7}');
  assert.deepEqual(jsNumbers(plain), JSON.parse(text));
  // In a template or String(), as Python's str(): never "[object Object]".
  assert.equal(`${String(plain.f)} ${String(plain.big)} ${String(new PyFloat(1e-5))}`, '1.0 12345678901234567890 1e-05');
});

test('jsonEqual compares like Python ==: key order ignored, list order and types kept', () => {
  assert.equal(jsonEqual({ a: 1, b: [1, { c: 2 }] }, { b: [1, { c: 2 }], a: 1 }), true);
  assert.equal(jsonEqual({ a: [1, 2] }, { a: [2, 1] }), false);
  assert.equal(jsonEqual({ a: 1 }, { a: 1, b: undefined }), false);
  assert.equal(jsonEqual([], {}), false);
  assert.equal(jsonEqual('1', 1), false);
  assert.equal(jsonEqual(null, {}), false);
});

test('jsonEqual compares numbers by value as Python does: 1 == 1.0 == True, big integers exactly, NaN as json.loads gives it', () => {
  const parsed = (text: string): unknown => pyPlainData(parsePyJson(text));
  assert.equal(jsonEqual(parsed('{"a": 1.0, "b": [2.50]}'), { a: 1, b: [2.5] }), true);
  assert.equal(jsonEqual(parsed('{"a": 1.0}'), parsed('{"a": 1.0}')), true);
  assert.equal(jsonEqual(parsed('[1.5]'), parsed('[1.25]')), false);
  assert.equal(jsonEqual(parsed('[true, 0]'), parsed('[1.0, false]')), true);
  assert.equal(jsonEqual(parsed('12345678901234567890'), parsed('12345678901234567890')), true);
  assert.equal(jsonEqual(parsed('12345678901234567890'), parsed('12345678901234567891')), false);
  assert.equal(jsonEqual(parsed('12345678901234567890'), parsed('12345678901234567890.0')), false);
  assert.equal(jsonEqual(parsed('18446744073709551616'), parsed('18446744073709551616.0')), true);
  assert.equal(jsonEqual(parsed('[NaN]'), parsed('[NaN]')), true);
  assert.equal(jsonEqual(parsed('NaN'), parsed('NaN')), false);
  assert.equal(jsonEqual(parsed('-0.0'), 0), true);
  assert.equal(jsonEqual(parsed('1.0'), '1'), false);
  assert.equal(jsonEqual(parsed('1.0'), {}), false);
  for (const [a, b] of [
    ['{"a": 1.0}', '{"a": 1}'],
    ['[true]', '[1.0]'],
    ['12345678901234567890', '12345678901234567890.0'],
    ['18446744073709551616', '18446744073709551616.0'],
    ['[NaN]', '[NaN]'],
    ['NaN', 'NaN'],
  ]) {
    const expected = execFileSync(
      'python3',
      ['-c', 'import json, sys; print(json.loads(sys.argv[1]) == json.loads(sys.argv[2]))', a!, b!],
      {
        encoding: 'utf8',
      },
    ).trim();
    assert.equal(String(jsonEqual(parsed(a!), parsed(b!))), expected.toLowerCase(), `${a} == ${b}`);
  }
});

test('strings read exactly as JSON.parse reads them, escapes, surrogates and runs of plain text alike', () => {
  const pieces = [
    'plain text ',
    'é',
    '\n',
    '\\',
    '"',
    '/',
    '\t',
    '\u0001',
    '\u007f',
    '\u2028',
    '😀',
    '\ud800',
    '\udfff',
    'x'.repeat(300),
    '',
  ];
  let seed = 7;
  const next = () => (seed = (seed * 48271) % 2147483647);
  for (let i = 0; i < 300; i++) {
    const value = Array.from({ length: next() % 12 }, () => pieces[next() % pieces.length]).join('');
    const text = JSON.stringify({ [value]: [value] });
    const parsed = parsePyJson(text);
    assert.ok(isDict(parsed));
    assert.deepEqual([...parsed], [[value, [value]]], text);
  }
  assert.equal(parsePyJson('"a\\/b\\u00e9\\ud83d\\ude00"'), 'a/bé😀');
});

test('a document of tens of MB parses into about its own size of memory, not tens of bytes a character', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const line = 'echo "a line of a config script" > /tmp/x\n';
  const config = line.repeat(Math.ceil((16 * 1024 * 1024) / line.length));
  const text = JSON.stringify({ config });
  gc();
  const before = process.memoryUsage().heapUsed;
  const parsed = parsePyJson(text);
  gc();
  const held = process.memoryUsage().heapUsed - before;
  assert.ok(isDict(parsed) && parsed.get('config') === config);
  // Built a character at a time, this 16 MB string held ~500 MB of heap.
  assert.ok(held < 64 * 1024 * 1024, `the parsed document holds ${Math.round(held / 1024 / 1024)} MB of heap`);
});
