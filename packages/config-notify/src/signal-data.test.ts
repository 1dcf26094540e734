import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { endsInsideJson, parseSignalData, readAll, wellFormed } from './signal-data.ts';

test('a JSON object is the signal data', () => {
  const parsed = parseSignalData(Buffer.from('{"deploy_stdout":"hi","deploy_status_code":0}'));
  assert.deepEqual(parsed, { data: { deploy_stdout: 'hi', deploy_status_code: 0 }, warnings: [], cutShort: false });
});

test('invalid UTF-8 bytes become U+FFFD with a warning, and the rest survives', () => {
  const input = Buffer.concat([
    Buffer.from('{"deploy_stdout":"caf'),
    Buffer.from([0xe9, 0xff, 0xfe]),
    Buffer.from('!","deploy_status_code":0}'),
  ]);
  const parsed = parseSignalData(input);
  assert.equal(parsed.data.deploy_stdout, 'caf\uFFFD\uFFFD\uFFFD!');
  assert.match(parsed.warnings.join(), /not valid UTF-8/);
  assert.equal(Buffer.from(JSON.stringify(parsed.data), 'utf8').toString('utf8'), JSON.stringify(parsed.data));
});

test('valid U+FFFD in the input is not reported as invalid UTF-8', () => {
  assert.deepEqual(parseSignalData(Buffer.from('{"a":"\uFFFD"}')).warnings, []);
});

test('lone surrogate escapes (Python surrogateescape output) become U+FFFD; pairs stay', () => {
  const parsed = parseSignalData(Buffer.from('{"deploy_stderr":"a\\udcff b\\ud83d\\ude00 c\\ud800","k\\udc80":1}'));
  assert.equal(parsed.data.deploy_stderr, 'a\uFFFD b\u{1F600} c\uFFFD');
  assert.deepEqual(Object.keys(parsed.data), ['deploy_stderr', 'k\uFFFD']);
  assert.equal(wellFormed('\uDBFF'), '\uFFFD');
});

test('empty, non-JSON and non-object input signal {} with a warning, as the original', () => {
  for (const [input, warning] of [
    ['', /no signal data/],
    ['  \n', /no signal data/],
    ['not json', /not JSON/],
    ['[1,2]', /array, not an object/],
    ['"text"', /string, not an object/],
    ['null', /is a JSON null, not an object/],
  ] as const) {
    const parsed = parseSignalData(Buffer.from(input));
    assert.deepEqual(parsed.data, {}, input);
    assert.match(parsed.warnings.join(), warning, input);
  }
});

test('JSON cut short (a string or bracket left open) is told apart from input that is not JSON', () => {
  const whole = '{"deploy_stdout": "a \\" } ] b", "outputs": {"list": [1, {"k": "v"}]}, "deploy_status_code": 0}\n';
  assert.equal(endsInsideJson(whole), false);
  for (let end = 1; end < whole.trimEnd().length; end += 1) {
    assert.equal(endsInsideJson(whole.slice(0, end)), true, whole.slice(0, end));
    const parsed = parseSignalData(Buffer.from(whole.slice(0, end)));
    assert.equal(parsed.cutShort, true, whole.slice(0, end));
    assert.deepEqual(parsed.data, {});
  }
  assert.equal(parseSignalData(Buffer.from(whole)).cutShort, false);
  for (const input of ['', 'not json', '{oops}', '"text', '[1,2]', 'null', '{"a": 1}}', '  {"a": 1} trailing']) {
    assert.equal(parseSignalData(Buffer.from(input)).cutShort, false, input);
  }
});

test('readAll joins the chunks of a stream', async () => {
  const stream = Readable.from([Buffer.from('ab'), Buffer.from('cd')]);
  assert.equal((await readAll(stream)).toString(), 'abcd');
});
