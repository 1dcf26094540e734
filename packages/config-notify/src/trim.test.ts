import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SIGNAL_BYTES } from '@hearth/protocol';
import { outputCutMarker } from '../../../hooks/_lib/outputs.ts';
import { keepEnd, MAX_OUTPUT_CHARS } from '../../../hooks/_lib/result.ts';
import { OutputTail } from '../../heat-config/src/output-tail.ts';
import { cutMarker, DEFAULT_MAX_BODY_BYTES, fitSignalBody } from './trim.ts';

const bytes = (text: string): number => Buffer.byteLength(text, 'utf8');

test('the default limit is the server signal body limit', () => {
  assert.equal(DEFAULT_MAX_BODY_BYTES, MAX_SIGNAL_BYTES);
});

test('a body that fits is sent unchanged', () => {
  const data = { deploy_stdout: 'out', deploy_stderr: 'err', deploy_status_code: 0, result: { a: 1 } };
  const fitted = fitSignalBody(data);
  assert.equal(fitted.body, JSON.stringify(data));
  assert.deepEqual(fitted.cuts, []);
});

test('a 5 MB stdout keeps its end behind a marker; a short stderr stays whole; the body fits the limit', () => {
  const head = 'HEAD-LINE\n';
  const tail = '\nthe last line says why it failed';
  const stdout = head + 'x'.repeat(5 * 1024 * 1024) + tail;
  const data = { deploy_stdout: stdout, deploy_stderr: 'short error', deploy_status_code: 2, an_output: 'value' };
  const fitted = fitSignalBody(data);
  assert.ok(fitted.bytes <= DEFAULT_MAX_BODY_BYTES, `${fitted.bytes} bytes`);
  assert.ok(fitted.bytes > DEFAULT_MAX_BODY_BYTES - 1024, `the room is used: ${fitted.bytes} bytes`);
  assert.equal(fitted.bytes, bytes(fitted.body));
  const sent = JSON.parse(fitted.body);
  assert.equal(sent.deploy_stderr, 'short error');
  assert.equal(sent.deploy_status_code, 2);
  assert.equal(sent.an_output, 'value');
  assert.ok(sent.deploy_stdout.endsWith(tail));
  assert.ok(!sent.deploy_stdout.includes(head));
  const match = /^\[heat-config-notify: the first (\d+) bytes were cut to fit the signal size limit\]\n/.exec(sent.deploy_stdout);
  assert.ok(match, sent.deploy_stdout.slice(0, 120));
  const kept = sent.deploy_stdout.slice(match[0].length);
  assert.equal(Number(match[1]) + bytes(kept), bytes(stdout), 'the marker counts exactly the bytes removed');
  assert.deepEqual(fitted.cuts, [{ field: 'deploy_stdout', cutBytes: Number(match[1]), dropped: false }]);
});

test('two long outputs share the room fairly and both keep their tails', () => {
  const data = { deploy_stdout: 'o'.repeat(800_000) + 'OUT-END', deploy_stderr: 'e'.repeat(800_000) + 'ERR-END' };
  const fitted = fitSignalBody(data, 1_000_000);
  const sent = JSON.parse(fitted.body);
  assert.ok(fitted.bytes <= 1_000_000);
  assert.ok(sent.deploy_stdout.endsWith('OUT-END') && sent.deploy_stderr.endsWith('ERR-END'));
  assert.ok(Math.abs(sent.deploy_stdout.length - sent.deploy_stderr.length) < 10, 'equal shares');
});

test('escapes and multi-byte characters are counted as sent, and surrogate pairs are never split', () => {
  const unit = '"\\\n\u0001é€😀';
  const data = { deploy_stdout: unit.repeat(100_000) };
  const fitted = fitSignalBody(data, 200_000);
  assert.ok(fitted.bytes <= 200_000, `${fitted.bytes}`);
  assert.ok(fitted.bytes > 199_000, `${fitted.bytes}`);
  const sent = JSON.parse(fitted.body).deploy_stdout as string;
  assert.ok(sent.endsWith(unit));
  assert.doesNotMatch(sent.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''), /[\uD800-\uDFFF]/, 'no lone surrogate');
});

test('a huge non-string output is dropped (listed in cuts) when nothing else makes room', () => {
  const big = Array.from({ length: 200_000 }, (_, i) => i);
  const data = { deploy_stdout: 'ok', deploy_status_code: 0, numbers: big, small: [1, 2] };
  const fitted = fitSignalBody(data, 64 * 1024);
  const sent = JSON.parse(fitted.body);
  assert.equal(sent.numbers, undefined);
  assert.deepEqual(sent.small, [1, 2]);
  assert.equal(sent.deploy_stdout, 'ok');
  assert.equal(fitted.cuts.length, 1);
  assert.equal(fitted.cuts[0]!.field, 'numbers');
  assert.equal(fitted.cuts[0]!.dropped, true);
});

test('the marker names the number of bytes', () => {
  assert.equal(cutMarker(42), '[heat-config-notify: the first 42 bytes were cut to fit the signal size limit]\n');
});

test('20 000 short string outputs: the body fits, deploy_status_code and the std streams stay, deploy_stderr names what was dropped', () => {
  const data: Record<string, unknown> = { deploy_stdout: 'ran\n', deploy_stderr: 'warned\n', deploy_status_code: 4 };
  for (let i = 0; i < 20_000; i += 1) data[`out_${i}`] = 'v'.repeat(60);
  assert.ok(bytes(JSON.stringify(data)) > DEFAULT_MAX_BODY_BYTES);
  const fitted = fitSignalBody(data);
  assert.ok(fitted.bytes <= DEFAULT_MAX_BODY_BYTES, `${fitted.bytes} bytes`);
  assert.equal(fitted.bytes, bytes(fitted.body));
  assert.ok(fitted.bytes > DEFAULT_MAX_BODY_BYTES - 8 * 1024, `the room is used: ${fitted.bytes} bytes`);
  const sent = JSON.parse(fitted.body);
  assert.equal(sent.deploy_status_code, 4);
  assert.equal(sent.deploy_stdout, 'ran\n');
  const dropped = fitted.cuts.filter((cut) => cut.dropped);
  assert.ok(dropped.length > 0 && dropped.length === fitted.cuts.length, 'short values are dropped whole, never given a marker');
  for (const cut of dropped) assert.equal(sent[cut.field], undefined);
  const kept = Object.keys(sent).filter((key) => key.startsWith('out_'));
  assert.equal(kept.length + dropped.length, 20_000);
  for (const key of kept) assert.equal(sent[key], 'v'.repeat(60), 'a kept output is whole');
  assert.match(
    sent.deploy_stderr,
    new RegExp(`^warned\\n\\[heat-config-notify: ${dropped.length} value\\(s\\) dropped to fit the signal size limit: out_`),
  );
  assert.match(sent.deploy_stderr, / and \d+ more\]\n$/);
});

test('200 000 non-string outputs are fitted in linear time (one size per value), largest dropped first', () => {
  const data: Record<string, unknown> = { deploy_status_code: 0, deploy_stdout: 'x' };
  for (let i = 0; i < 200_000; i += 1) data[`n${i}`] = i % 2 === 0 ? { list: [i, i, i], pad: 'p'.repeat(20) } : i;
  const started = Date.now();
  const fitted = fitSignalBody(data, 256 * 1024);
  const elapsed = Date.now() - started;
  assert.ok(elapsed < 20_000, `took ${elapsed} ms`);
  assert.ok(fitted.bytes <= 256 * 1024, `${fitted.bytes} bytes`);
  const sent = JSON.parse(fitted.body);
  assert.equal(sent.deploy_status_code, 0);
  assert.equal(sent.deploy_stdout, 'x');
  const kept = Object.keys(sent).filter((key) => key.startsWith('n'));
  assert.ok(kept.length > 1000, `${kept.length} kept`);
  assert.ok(
    kept.every((key) => typeof sent[key] === 'number'),
    'every object, larger than any number, was dropped first',
  );
  assert.match(sent.deploy_stderr, /^\[heat-config-notify: \d+ value\(s\) dropped to fit the signal size limit: /);
});

test('keys too long to name and values of any kind: the body still fits and the status code is kept', () => {
  const data: Record<string, unknown> = { deploy_status_code: 3, deploy_stderr: null };
  for (let i = 0; i < 20; i += 1) data[`${'k'.repeat(100_000)}${i}`] = 'a';
  const fitted = fitSignalBody(data);
  assert.ok(fitted.bytes <= DEFAULT_MAX_BODY_BYTES, `${fitted.bytes} bytes`);
  const sent = JSON.parse(fitted.body);
  assert.equal(sent.deploy_status_code, 3);
  assert.match(sent.deploy_stderr, /^\[heat-config-notify: \d+ value\(s\) dropped to fit the signal size limit: \d+ more\]\n$/);
});

test('lone surrogates are counted as JSON escapes them (6 bytes each)', () => {
  const data = { deploy_stdout: '\ud800'.repeat(300_000) + 'END' };
  const fitted = fitSignalBody(data, 200_000);
  assert.ok(fitted.bytes <= 200_000, `${fitted.bytes} bytes`);
  assert.equal(fitted.bytes, bytes(fitted.body));
  assert.ok((JSON.parse(fitted.body).deploy_stdout as string).endsWith('\ud800END'));
});

test('a limit too small for anything but the status code sends the status code', () => {
  const fitted = fitSignalBody({ deploy_stdout: 'x'.repeat(1000), deploy_status_code: 2 }, 40);
  assert.equal(fitted.body, '{"deploy_status_code":2}');
  assert.ok(fitted.cuts.every((cut) => cut.dropped));
});

/** The count and kept tail of a value cut by heat-config-notify that says how much was cut earlier. */
function combined(value: string): { total: number; unit: string; earlier: number; kept: string } {
  const match =
    /^\[heat-config-notify: the first (\d+) (bytes|characters) were cut to fit the signal size limit \((\d+) of them earlier\)\]\n/.exec(
      value,
    );
  assert.ok(match, value.slice(0, 200));
  return { total: Number(match[1]), unit: match[2]!, earlier: Number(match[3]), kept: value.slice(match[0].length) };
}

test("a hook's marker (characters) is replaced by one marker counting both cuts, in characters", () => {
  const original = `${'é'.repeat(3_000_000)}END`;
  const fromHook = keepEnd(original, 'stdout', 0);
  const cutByHook = original.length - MAX_OUTPUT_CHARS;
  assert.ok(fromHook.startsWith(`[hook: the first ${cutByHook} characters of the tool's stdout were cut]\n`));
  const sent = JSON.parse(fitSignalBody({ deploy_stdout: fromHook, deploy_status_code: 0 }).body);
  const { total, unit, earlier, kept } = combined(sent.deploy_stdout);
  assert.equal(unit, 'characters');
  assert.equal(earlier, cutByHook);
  assert.ok(kept.endsWith('END') && !kept.includes('[hook:'));
  assert.equal(total + kept.length, original.length, 'every character is counted or kept');
});

test("an output file's marker and heat-config's (bytes) are replaced by one marker counting both cuts, in bytes", () => {
  const fileText = `${'ü'.repeat(700_000)}FILE-END`;
  const cutFromFile = 123_456;
  const output = outputCutMarker('big', cutFromFile) + fileText;
  const tail = new OutputTail(1_500_007); // drops whole characters: 200 000 €
  const written = Buffer.from(`${'€'.repeat(700_000)}OUT-END`);
  tail.push(written);
  const stdout = tail.text('stdout');
  assert.match(stdout, /^\[heat-config: the first \d+ bytes of the hook's stdout were dropped;/);
  const fitted = fitSignalBody({ big: output, deploy_stdout: stdout, deploy_status_code: 1 });
  assert.ok(fitted.bytes <= DEFAULT_MAX_BODY_BYTES);
  const sent = JSON.parse(fitted.body);
  const big = combined(sent.big);
  assert.deepEqual([big.unit, big.earlier], ['bytes', cutFromFile]);
  assert.equal(big.total + bytes(big.kept), cutFromFile + bytes(fileText));
  const out = combined(sent.deploy_stdout);
  assert.deepEqual([out.unit, out.earlier], ['bytes', tail.dropped]);
  assert.ok(out.kept.endsWith('OUT-END'));
  assert.equal(out.total + bytes(out.kept), written.length);
});

test('a value cut again keeps one marker; a value that fits keeps the earlier marker as it is', () => {
  const once = JSON.parse(fitSignalBody({ deploy_stdout: 'a'.repeat(300_000) }, 200_000).body).deploy_stdout as string;
  const twice = JSON.parse(fitSignalBody({ deploy_stdout: once }, 100_000).body).deploy_stdout as string;
  const { total, unit, kept } = combined(twice);
  assert.equal(unit, 'bytes');
  assert.equal(total + kept.length, 300_000);
  assert.equal(twice.match(/heat-config-notify/g)?.length, 1);

  const fits = `[hook: the first 5 characters of the tool's stderr were cut]\nshort`;
  assert.equal(JSON.parse(fitSignalBody({ deploy_stderr: fits, other: 'x'.repeat(2_000_000) }).body).deploy_stderr, fits);
});
