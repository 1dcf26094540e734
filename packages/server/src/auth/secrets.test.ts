import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newAccessKeyId, newRandomToken, SecretDeriver } from './secrets.ts';

test('random tokens are 43 base64url characters and never start with a dash (argparse would read it as an option)', () => {
  const seen = new Set<string>();
  // 5000 draws: a 1-in-64 leading dash would appear ~78 times if not excluded.
  for (let i = 0; i < 5000; i += 1) {
    const token = newRandomToken();
    assert.match(token, /^[A-Za-z0-9_][A-Za-z0-9_-]{42}$/);
    seen.add(token);
  }
  assert.equal(seen.size, 5000, 'tokens do not repeat');
});

test('access key ids are 32 lowercase hex characters whose derived secret never starts with a dash', () => {
  const secrets = new SecretDeriver('unit-test-secret-key-0123456789');
  // 3000 draws: about 47 secrets would start with a dash if it were not excluded.
  for (let i = 0; i < 3000; i += 1) {
    const id = newAccessKeyId(secrets);
    assert.match(id, /^[0-9a-f]{32}$/);
    assert.match(secrets.agentSecret(id), /^[A-Za-z0-9_][A-Za-z0-9_-]{39}$/);
  }
});
