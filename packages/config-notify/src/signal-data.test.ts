import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { parseSignalData, readAll, wellFormed } from './signal-data.ts';

test('a JSON object is the signal data', () => {
  const parsed = parseSignalData(Buffer.from('{"deploy_stdout":"hi","deploy_status_code":0}'));
  assert.deepEqual(parsed, { data: { deploy_stdout: 'hi', deploy_status_code: 0 }, warnings: [] });
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

test('readAll joins the chunks of a stream', async () => {
  const stream = Readable.from([Buffer.from('ab'), Buffer.from('cd')]);
  assert.equal((await readAll(stream)).toString(), 'abcd');
});
