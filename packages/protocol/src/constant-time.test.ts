import { test } from 'node:test';
import assert from 'node:assert/strict';
import { timingSafeEqual } from 'node:crypto';
import { secretsEqual } from './constant-time.ts';

test('secretsEqual is true only for the same string', () => {
  const secret = 'AKIA0123456789:s3cr3t-Value_with-43-characters-abcdefghijk';
  assert.equal(secretsEqual(secret, secret), true);
  assert.equal(secretsEqual(`${secret}`.slice(0), String(secret)), true);
  assert.equal(secretsEqual('', ''), true);
  for (let i = 0; i < secret.length; i++) {
    // One code unit changed, at every position (first, middle and last included).
    const changed = secret.slice(0, i) + String.fromCharCode(secret.charCodeAt(i) ^ 1) + secret.slice(i + 1);
    assert.equal(secretsEqual(changed, secret), false, `differs at ${i}`);
  }
  assert.equal(secretsEqual(secret.slice(0, -1), secret), false, 'a prefix');
  assert.equal(secretsEqual(`${secret}x`, secret), false, 'longer');
  assert.equal(secretsEqual('', secret), false, 'empty');
  assert.equal(secretsEqual(secret, ''), false, 'against empty');
  // A code unit's high byte counts as much as its low one.
  assert.equal(secretsEqual('\u0161', 'a'), false);
  assert.equal(secretsEqual('é-key', 'é-key'), true);
  // UTF-8 encodes every lone surrogate as U+FFFD: compared as bytes these two would be equal.
  assert.equal(timingSafeEqual(Buffer.from('\ud800'), Buffer.from('\udc00')), true);
  assert.equal(secretsEqual('\ud800', '\udc00'), false);
});
