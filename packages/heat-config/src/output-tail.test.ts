import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutputTail } from './output-tail.ts';

test('a tail that starts inside a character drops that character whole: the count and the text add up to what was written', () => {
  const written = Buffer.from(`${'€'.repeat(700_000)}OUT-END`);
  for (const limit of [1_500_000, 1_500_001, 1_500_002]) {
    const tail = new OutputTail(limit);
    for (let at = 0; at < written.length; at += 65_536) tail.push(written.subarray(at, at + 65_536));
    const text = tail.text('stdout');
    const [marker, kept] = [text.slice(0, text.indexOf('\n')), text.slice(text.indexOf('\n') + 1)];
    const dropped = Number(/the first (\d+) bytes/.exec(marker)?.[1]);
    assert.ok(!kept.includes('\ufffd'), `limit ${limit}: no replacement character`);
    assert.ok(kept.endsWith('OUT-END'));
    assert.equal(dropped + Buffer.byteLength(kept), written.length, `limit ${limit}`);
  }
});

test('nothing dropped: the text as written, without a marker', () => {
  const tail = new OutputTail(100);
  tail.push(Buffer.from('héllo\n'));
  assert.equal(tail.text('stderr'), 'héllo\n');
});
