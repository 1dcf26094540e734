import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Event } from '@hearth/protocol';
import { eventLine } from './events.ts';

const event: Event = {
  id: 7,
  time: '2026-11-27T02:00:00Z',
  type: 'server.created',
  resource_type: 'server',
  resource_id: 'vm\u001b]0;owned\u0007',
  server_id: null,
  message: 'Server web\u001b[2J\u001b[31mred created\r\nfake line',
  data: {},
};

test('a followed event line shows escape sequences from names escaped, never raw; --json keeps the text', () => {
  const line = eventLine(event, false);
  const controls = [...line.slice(0, -1)].filter((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f);
  assert.deepEqual(controls, [], 'no control character but the final newline');
  assert.match(
    line,
    /^7 {2}2026-11-27T02:00:00Z {2}server\.created {2}vm\\x1b\]0;owned\\x07 {2}Server web\\x1b\[2J\\x1b\[31mred created fake line\n$/,
  );
  assert.equal(JSON.parse(eventLine(event, true)).message, event.message);
});
