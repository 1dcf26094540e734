import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isSecretName, redactText, redactUrl } from './redact.ts';

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

test('redactText hides secret query values and URL passwords inside free text, keeping the rest as written', () => {
  assert.equal(
    redactText('could not download http://h:1/a.tar.gz?X-Amz-Credential=AK%2Fs3&X-Amz-Signature=SIG&X-Amz-Security-Token=TOK: HTTP 500'),
    'could not download http://h:1/a.tar.gz?X-Amz-Credential=AK%2Fs3&X-Amz-Signature=***&X-Amz-Security-Token=***: HTTP 500',
  );
  // A path a server echoed back, without scheme or host, and a sentence ending right after the value.
  assert.equal(
    redactText('status 500: boom /v1/waitcondition/arn?SignatureMethod=HmacSHA256&Signature=abc%2B (retrying).'),
    'status 500: boom /v1/waitcondition/arn?SignatureMethod=HmacSHA256&Signature=*** (retrying).',
  );
  assert.equal(
    redactText('(see http://h/o?temp_url_sig=dead&temp_url_expires=1).'),
    '(see http://h/o?temp_url_sig=***&temp_url_expires=1).',
  );
  assert.equal(redactText('GET http://user:pa55@h:8000/x failed'), 'GET http://user:***@h:8000/x failed');
  for (const plain of ['GET http://h:8000 answered 404', 'http://h/x?a=1&SignatureVersion=2', 'a=1 token=t', 'user@example.com'])
    assert.equal(redactText(plain), plain);
});

test('redactText leaves out the text a JSON.parse error quotes, keeping what went wrong', () => {
  const messageOf = (text: string): string => {
    try {
      JSON.parse(text);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('parsed');
  };
  const short = messageOf('{"password": S3cretPW}');
  const long = messageOf(`{"a": "${'x'.repeat(80)}", "deploy_password": S3cretPW, "b": "${'y'.repeat(80)}"}`);
  assert.match(short, /S3cret/);
  assert.match(long, /S3cret/);
  assert.equal(redactText(`f.json is not valid JSON (${short})`), "f.json is not valid JSON (Unexpected token 'S' in JSON)");
  assert.equal(redactText(long), "Unexpected token 'S' in JSON");
  assert.equal(redactText(messageOf('S3cretPW')), "Unexpected token 'S' in JSON");
  assert.equal(redactText(messageOf('[object Object]')), 'the text is not valid JSON');
  const positional = messageOf('{"password": "S3cretPW" 1}');
  assert.equal(redactText(positional), positional);
});

test('redactText hides secret JSON members a server echoed back, at any depth of escaping and when cut off', () => {
  const body = JSON.stringify({ auth: { password: { user: { id: 'u1', password: 'Pw"7\\zq' } } }, scope: 'p1' });
  assert.equal(redactText(body), '{"auth":{"password":{"user":{"id":"u1","password":"***"}}},"scope":"p1"}');
  const once = JSON.stringify({ error: { message: `bad request: ${body}` } });
  assert.equal(redactText(once), JSON.stringify({ error: { message: `bad request: ${redactText(body)}` } }));
  const twice = JSON.stringify({ echo: once });
  assert.equal(redactText(twice), JSON.stringify({ echo: redactText(once) }));
  assert.equal(redactText(body.slice(0, body.indexOf('Pw') + 4)), '{"auth":{"password":{"user":{"id":"u1","password":"***');
  // A value ending in an escaped backslash ends there; the next secret member is still found.
  assert.equal(
    redactText('{"path": "C:\\\\", "secret_access_key": "AbC", "n": "x"}'),
    '{"path": "C:\\\\", "secret_access_key": "***", "n": "x"}',
  );
  for (const plain of ['{"password": ""}', '{"user": "u1", "message": "the password is wrong"}', 'a "token" word'])
    assert.equal(redactText(plain), plain);
});

test('redactText hides credential headers a server echoed back, as lines, collapsed or JSON-escaped', () => {
  assert.equal(
    redactText('GET /v1/guest/metadata HTTP/1.1\nAuthorization: Bearer AK1:s3cr3t\nX-Auth-Token: tok-1\nhost: h'),
    'GET /v1/guest/metadata HTTP/1.1\nAuthorization: Bearer ***\nX-Auth-Token: ***\nhost: h',
  );
  assert.equal(redactText('POST /x HTTP/1.1 x-subject-token: tok-2 accept: */*'), 'POST /x HTTP/1.1 x-subject-token: *** accept: */*');
  assert.equal(redactText(JSON.stringify('a\nauthorization: Basic dXNlcjpwdw==\nb')), JSON.stringify('a\nauthorization: Basic ***\nb'));
  for (const plain of ['authorization failed', 'keystone refused the credentials (401)', 'Token: plain words'])
    assert.equal(redactText(plain), plain);
});
