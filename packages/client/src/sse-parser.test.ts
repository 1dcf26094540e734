import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from './sse-parser.ts';

test('parses id, event and data and skips keepalive comments', () => {
  const parser = new SseParser();
  const messages = parser.push(': keepalive\n\nid: 7\nevent: server.created\ndata: {"id":7}\n\n');
  assert.deepEqual(messages, [{ id: '7', event: 'server.created', data: '{"id":7}' }]);
});

test('joins multi-line data and defaults the event type to message', () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push('data: a\ndata: b\n\n'), [{ id: undefined, event: 'message', data: 'a\nb' }]);
});

test('handles any chunking, including CRLF split across chunks', () => {
  const text = 'id: 1\r\nevent: x\r\ndata: {"n":1}\r\n\r\nid: 2\r\ndata: two\r\n\r\n';
  for (let size = 1; size <= text.length; size++) {
    const parser = new SseParser();
    const messages = [];
    for (let i = 0; i < text.length; i += size) messages.push(...parser.push(text.slice(i, i + size)));
    assert.deepEqual(
      messages.map((m) => [m.id, m.data]),
      [
        ['1', '{"n":1}'],
        ['2', 'two'],
      ],
      `chunk size ${size}`,
    );
  }
});

test('keeps an unfinished message until its blank line arrives', () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push('id: 3\ndata: x\n'), []);
  assert.deepEqual(parser.push('\n'), [{ id: '3', event: 'message', data: 'x' }]);
});

test('returns a message that carries only an id, with empty data, so a client resumes from it', () => {
  const parser = new SseParser();
  assert.deepEqual(parser.push(': cursor 99 is beyond the newest event; following from 4\nid: 4\n\n: keepalive\n\n'), [
    { id: '4', event: 'message', data: '' },
  ]);
});
