import { test } from 'node:test';
import assert from 'node:assert/strict';
import { displayWidth, escapeControls, padDisplay } from './terminal-text.ts';

test('escapeControls shows control characters, DEL, C1 controls and bidi controls as escapes', () => {
  assert.equal(escapeControls('a\x1b[31mred\x1b]0;pwned\x07'), 'a\\x1b[31mred\\x1b]0;pwned\\x07');
  assert.equal(escapeControls('x\ry\bz\x7f\u009b2J'), 'x\\ry\\x08z\\x7f\\x9b2J');
  assert.equal(escapeControls('abc\u202edcba\u2066\u2028'), 'abc\\u202edcba\\u2066\\u2028');
  assert.equal(escapeControls('l1\nl2\tx'), 'l1\\nl2\\tx');
});

test('escapeControls keeps what it is told to keep, and leaves printable Unicode alone', () => {
  assert.equal(escapeControls('l1\n\tl2\x1b', '\n\t'), 'l1\n\tl2\\x1b');
  const printable = 'web-日本 e\u0301 👨‍👩‍👧 🇫🇷 a\u200bb';
  assert.equal(escapeControls(printable), printable);
});

test('displayWidth counts terminal columns: wide 2, combining and zero-width 0', () => {
  assert.equal(displayWidth('abc'), 3);
  assert.equal(displayWidth('日本語'), 6);
  assert.equal(displayWidth('👍'), 2);
  assert.equal(displayWidth('👨‍👩‍👧'), 2);
  assert.equal(displayWidth('e\u0301'), 1);
  assert.equal(displayWidth('a\u200bb'), 2);
  assert.equal(padDisplay('日本', 6), '日本  ');
  assert.equal(padDisplay('toolong', 3), 'toolong');
});
