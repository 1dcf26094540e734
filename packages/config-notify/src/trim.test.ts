import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SIGNAL_BYTES } from '@hearth/protocol';
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
