import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERRORS, formatErrorMessage } from './errors.ts';

test('every catalogue code is ERR_<AREA>_<WHAT>, has a 4xx/5xx status and a message', () => {
  for (const [code, entry] of Object.entries(ERRORS)) {
    assert.match(code, /^ERR_[A-Z]+(_[A-Z]+)*$/);
    assert.ok(entry.status >= 400 && entry.status < 600, code);
    assert.ok(entry.message.length > 10, code);
  }
});

test('every code is documented in the server README', () => {
  const readme = readFileSync(new URL('../../server/README.md', import.meta.url), 'utf8');
  for (const code of Object.keys(ERRORS)) assert.ok(readme.includes(code), `${code} missing from packages/server/README.md`);
});

test('messages are filled from details; missing values stay visible', () => {
  assert.equal(formatErrorMessage('ERR_CONFIG_NOT_FOUND', { id: 'abc' }), 'Software config abc does not exist in this project.');
  assert.match(formatErrorMessage('ERR_CONFIG_NOT_FOUND'), /\{id\}/);
});
