import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { issueToken, TOKEN_PREFIX, verifyToken } from './keystone-token.ts';

const KEY = Buffer.from('0123456789abcdef0123456789abcdef', 'hex');
const EXPIRES = new Date('2030-01-01T00:00:00.123Z');
const NOW = new Date('2029-12-31T23:00:00Z');
const CLAIMS = { accessKeyId: '0123456789abcdef0123456789abcdef', projectId: 'proj-ü 1', expiresAt: EXPIRES };

function reason(result: ReturnType<typeof verifyToken>): string {
  assert.equal(result.ok, false);
  return result.ok ? '' : result.reason;
}

test('a token round-trips its claims', () => {
  const token = issueToken({ ...CLAIMS, key: KEY });
  assert.ok(token.startsWith(TOKEN_PREFIX));
  assert.match(token, /^hk1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  assert.deepEqual(verifyToken(token, KEY, NOW), { ok: true, ...CLAIMS });
});

test('the signature is HMAC-SHA256 over the prefix and claims, base64url', () => {
  const token = issueToken({ ...CLAIMS, key: KEY });
  const body = token.slice(0, token.lastIndexOf('.'));
  assert.equal(token.slice(body.length + 1), createHmac('sha256', KEY).update(body).digest('base64url'));
  const claims = JSON.parse(Buffer.from(body.slice(TOKEN_PREFIX.length), 'base64url').toString());
  assert.deepEqual(claims, { a: CLAIMS.accessKeyId, p: CLAIMS.projectId, e: EXPIRES.getTime() });
});

test('a wrong key is refused', () => {
  const token = issueToken({ ...CLAIMS, key: KEY });
  assert.match(reason(verifyToken(token, Buffer.alloc(16, 1), NOW)), /signature/);
  assert.match(reason(verifyToken(token, Buffer.alloc(0), NOW)), /signature/);
});

test('tampered claims or signature are refused', () => {
  const token = issueToken({ ...CLAIMS, key: KEY });
  const [prefix, claims, sig] = token.split('.') as [string, string, string];
  const forged = Buffer.from(JSON.stringify({ a: CLAIMS.accessKeyId, p: 'other-project', e: EXPIRES.getTime() })).toString('base64url');
  assert.match(reason(verifyToken(`${prefix}.${forged}.${sig}`, KEY, NOW)), /signature/);
  const flipped = sig.startsWith('A') ? `B${sig.slice(1)}` : `A${sig.slice(1)}`;
  assert.match(reason(verifyToken(`${prefix}.${claims}.${flipped}`, KEY, NOW)), /signature/);
  assert.match(reason(verifyToken(`${prefix}.${claims}x.${sig}`, KEY, NOW)), /signature/);
  assert.match(reason(verifyToken(`${prefix}.${claims}.${sig}x`, KEY, NOW)), /signature/);
});

test('an expired token is refused, from its expiry instant on', () => {
  const token = issueToken({ ...CLAIMS, key: KEY });
  assert.match(reason(verifyToken(token, KEY, EXPIRES)), /expired at 2030-01-01T00:00:00.123Z/);
  assert.equal(verifyToken(token, KEY, new Date(EXPIRES.getTime() - 1)).ok, true);
});

test('other formats are refused', () => {
  assert.match(reason(verifyToken('gAAAAABkeystone-fernet-token', KEY, NOW)), /prefix/);
  assert.match(reason(verifyToken('hk1.', KEY, NOW)), /no signature/);
  assert.match(reason(verifyToken('hk2.e30.x', KEY, NOW)), /prefix/);
});

test('well-signed but malformed claims are refused', () => {
  for (const claims of ['not json', '[]', '{"a":"k","p":"p"}', '{"a":1,"p":"p","e":1}']) {
    const body = `${TOKEN_PREFIX}${Buffer.from(claims).toString('base64url')}`;
    const token = `${body}.${createHmac('sha256', KEY).update(body).digest('base64url')}`;
    assert.match(reason(verifyToken(token, KEY, NOW)), /malformed/, claims);
  }
});

test('issueToken refuses a short key and an invalid expiry', () => {
  assert.throws(() => issueToken({ ...CLAIMS, key: Buffer.alloc(8) }), /at least 16 bytes/);
  assert.throws(() => issueToken({ ...CLAIMS, expiresAt: new Date('nope'), key: KEY }), /not a valid date/);
});
