import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ToolOutputTail } from './tool-output.ts';

test('keeps the last bytes from a whole character and counts the characters dropped before them', () => {
  const accents = new ToolOutputTail(5);
  for (const char of 'éééééééééé') accents.push(Buffer.from(char));
  assert.deepEqual(accents.result(), { text: 'éé', cutChars: 8 });

  const emoji = new ToolOutputTail(6);
  emoji.push(Buffer.from('😀😀😀'));
  // Counted in UTF-16 characters, as JavaScript's string length counts the kept text.
  assert.deepEqual(emoji.result(), { text: '😀', cutChars: 4 });

  const whole = new ToolOutputTail(100);
  whole.push(Buffer.from('short\n'));
  assert.deepEqual(whole.result(), { text: 'short\n', cutChars: 0 });
});
