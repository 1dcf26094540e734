import { test } from 'node:test';
import assert from 'node:assert/strict';
import { signTempUrl, verifyTempUrl, type TempUrlVerifyOptions } from './temp-url.ts';

// Vectors computed independently with python3's hmac/hashlib/base64:
//   hmac.new(b'hearth-temp-url-key', b'GET\n1893456000\n' + PATH, hashlib.sha1).hexdigest()  (and PUT, sha256, sha512)
const KEY = 'hearth-temp-url-key';
const PATH = '/v1/AUTH_proj/metadata/0123456789abcdef0123456789abcdef';
const EXPIRES = 1893456000; // 2030-01-01T00:00:00Z
const GET_SHA1 = 'efa0c8c5ce2cff04ada5dbb8a0b04f8ef11ca30b';
const PUT_SHA1 = 'd61137ac16aff2a76e0d5cce3dcc71c2b69e31e5';
const GET_SHA256_HEX = 'cf0d266fe6a2083fa430ae1a74620a1ac497cb8ecf407b1049e2a934c3cc325a';
const GET_SHA256_B64 = 'zw0mb+aiCD+kMK4adGIKGsSXy47PQHsQSeKpNMPMMlo=';
const GET_SHA512_HEX =
  'dbda8027d0adc1b54305d477ef3acb94af9657ef6142f23eb19456e054e1e979551e88fe6c15c4e3793494e0eefb188bf4dc0473210ab1ff5799daf9d8b0ce5b';
const GET_SHA512_B64URL = '29qAJ9CtwbVDBdR37zrLlK-WV-9hQvI-sZRW4FTh6XlVHoj-bBXE43k0lODu-xiL9NwEcyEKsf9Xmdr52LDOWw';
const NOW = new Date('2029-06-01T00:00:00Z');

function verify(sig: string, overrides: Partial<TempUrlVerifyOptions> = {}) {
  return verifyTempUrl({
    method: 'GET',
    path: PATH,
    query: { temp_url_sig: sig, temp_url_expires: String(EXPIRES) },
    key: KEY,
    now: NOW,
    ...overrides,
  });
}

test('signTempUrl is hex HMAC-SHA1 of METHOD\\nEXPIRES\\nPATH (python3 vectors)', () => {
  assert.equal(signTempUrl({ method: 'GET', path: PATH, expires: EXPIRES, key: KEY }), GET_SHA1);
  assert.equal(signTempUrl({ method: 'PUT', path: PATH, expires: EXPIRES, key: KEY }), PUT_SHA1);
});

test('verifyTempUrl accepts the signed method and path', () => {
  assert.deepEqual(verify(GET_SHA1), { ok: true });
  assert.deepEqual(verify(PUT_SHA1, { method: 'PUT' }), { ok: true });
  assert.deepEqual(verify(GET_SHA1.toUpperCase()), { ok: true });
});

test('verifyTempUrl accepts SHA-256 and SHA-512, as hex or prefixed base64 (standard or URL-safe)', () => {
  for (const sig of [GET_SHA256_HEX, `sha256:${GET_SHA256_B64}`, GET_SHA512_HEX, `sha512:${GET_SHA512_B64URL}`]) {
    assert.deepEqual(verify(sig), { ok: true }, sig);
  }
  // A + turned into a space by form decoding of the query.
  assert.deepEqual(verify(`sha256:${GET_SHA256_B64.replace('+', ' ')}`), { ok: true });
  // The digest named must be the one used.
  assert.equal(verify(`sha512:${GET_SHA256_B64}`).ok, false);
});

test('HEAD is allowed with a GET or a PUT signature; GET is not allowed with a PUT signature', () => {
  assert.deepEqual(verify(GET_SHA1, { method: 'HEAD' }), { ok: true });
  assert.deepEqual(verify(PUT_SHA1, { method: 'HEAD' }), { ok: true });
  const result = verify(PUT_SHA1, { method: 'GET' });
  assert.equal(!result.ok && result.code, 'TempUrlInvalid');
  assert.equal(verify(GET_SHA1, { method: 'PUT' }).ok, false);
  assert.equal(verify(GET_SHA1, { method: 'POST' }).ok, false);
});

test('another path, key or expiry does not match', () => {
  assert.equal(verify(GET_SHA1, { path: `${PATH}x` }).ok, false);
  assert.equal(verify(GET_SHA1, { key: 'other-key' }).ok, false);
  const later = verify(GET_SHA1, { query: { temp_url_sig: GET_SHA1, temp_url_expires: String(EXPIRES + 1) } });
  assert.equal(!later.ok && later.code, 'TempUrlInvalid');
});

test('an expired URL is TempUrlExpired; the expiry second itself is still valid', () => {
  const expired = verify(GET_SHA1, { now: new Date((EXPIRES + 1) * 1000) });
  assert.equal(!expired.ok && expired.code, 'TempUrlExpired');
  assert.deepEqual(verify(GET_SHA1, { now: new Date(EXPIRES * 1000) }), { ok: true });
});

test('temp_url_expires in ISO 8601 is the same instant, signed as integer seconds (Swift)', () => {
  assert.deepEqual(verify(GET_SHA1, { query: { temp_url_sig: GET_SHA1, temp_url_expires: '2030-01-01T00:00:00Z' } }), { ok: true });
  const bad = verify(GET_SHA1, { query: { temp_url_sig: GET_SHA1, temp_url_expires: '2030-02-30T00:00:00Z' } });
  assert.equal(!bad.ok && bad.code, 'TempUrlInvalid');
});

test('missing parameters are TempUrlMissing; malformed ones TempUrlInvalid', () => {
  const missing = [{}, { temp_url_sig: GET_SHA1 }, { temp_url_expires: String(EXPIRES) }, { temp_url_sig: '', temp_url_expires: '' }];
  for (const query of missing) {
    const result = verifyTempUrl({ method: 'GET', path: PATH, query, key: KEY, now: NOW });
    assert.equal(!result.ok && result.code, 'TempUrlMissing', JSON.stringify(query));
  }
  for (const [sig, expires] of [
    [GET_SHA1.slice(1), String(EXPIRES)],
    [`${GET_SHA1.slice(1)}g`, String(EXPIRES)],
    [`md5:${GET_SHA256_B64}`, String(EXPIRES)],
    ['sha256:not base64!', String(EXPIRES)],
    [GET_SHA1, 'tomorrow'],
    [GET_SHA1, '-5'],
  ] as const) {
    const result = verifyTempUrl({
      method: 'GET',
      path: PATH,
      query: { temp_url_sig: sig, temp_url_expires: expires },
      key: KEY,
      now: NOW,
    });
    assert.equal(!result.ok && result.code, 'TempUrlInvalid', `${sig} ${expires}`);
  }
});
