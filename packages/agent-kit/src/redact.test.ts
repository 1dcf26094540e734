import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isSecretName, redactUrl } from './redact.ts';

test('isSecretName knows the secret spellings and leaves plain names alone', () => {
  for (const name of [
    'password',
    'db_password',
    'secret',
    'AWSSecretKey',
    'token',
    'X-Auth-Token',
    'Signature',
    'temp_url_sig',
    'secret_access_key',
    'api-key',
    'privateKey',
    'Authorization',
  ]) {
    assert.ok(isSecretName(name), name);
  }
  for (const name of ['user_id', 'access_key_id', 'AWSAccessKeyId', 'key', 'monkey', 'keys', 'design', 'url', 'stack_id']) {
    assert.equal(isSecretName(name), false, name);
  }
});

test('redactUrl hides secret query values and userinfo passwords, keeping everything else', () => {
  assert.equal(
    redactUrl(
      'http://h:8000/v1/waitcondition/arn%3Aopenstack?Timestamp=2024&SignatureMethod=HmacSHA256&AWSAccessKeyId=AK&SignatureVersion=2&Signature=abc%2Bdef',
    ),
    'http://h:8000/v1/waitcondition/arn%3Aopenstack?Timestamp=2024&SignatureMethod=HmacSHA256&AWSAccessKeyId=AK&SignatureVersion=2&Signature=***',
  );
  assert.equal(
    redactUrl('https://swift/v1/AUTH_p/c/o?temp_url_sig=deadbeef&temp_url_expires=1700000000'),
    'https://swift/v1/AUTH_p/c/o?temp_url_sig=***&temp_url_expires=1700000000',
  );
  assert.equal(redactUrl('http://user:pa55@h/x?token=t&flag'), 'http://user:***@h/x?token=***&flag');
  assert.equal(redactUrl('http://h/plain'), 'http://h/plain');
  assert.equal(redactUrl('http://h/x?sig%6Eature=v#frag'), 'http://h/x?sig%6Eature=***#frag');
});

test('redactUrl drops the query of something that is not a URL', () => {
  assert.equal(redactUrl('/relative/path?Signature=abc'), '/relative/path?***');
  assert.equal(redactUrl('not a url'), 'not a url');
});
