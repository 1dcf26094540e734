import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import {
  actuatorHeaders,
  actuatorSignature,
  actuatorUrlProblem,
  openSecret,
  retryDelayMs,
  sealSecret,
  verifyActuatorSignature,
} from './scaling-webhook.ts';

test('signature: sha256=hex HMAC over "<timestamp>.<body>", checked independently', () => {
  const body = '{"desired_capacity":2}';
  const expected = createHmac('sha256', 'actuator-secret-123').update(`1700000000.${body}`).digest('hex');
  assert.equal(actuatorSignature('actuator-secret-123', 1700000000, body), `sha256=${expected}`);
  const now = new Date(1700000000_000);
  const headers = actuatorHeaders('actuator-secret-123', 'd-1', body, now);
  assert.equal(headers['x-hearth-timestamp'], '1700000000');
  assert.equal(headers['x-hearth-delivery'], 'd-1');
  const received = { signature: headers['x-hearth-signature'], timestamp: headers['x-hearth-timestamp'] };
  assert.equal(verifyActuatorSignature('actuator-secret-123', received, body, now), true);
  assert.equal(verifyActuatorSignature('another-secret-0000', received, body, now), false);
  assert.equal(verifyActuatorSignature('actuator-secret-123', received, body.replace('2', '3'), now), false);
  assert.equal(verifyActuatorSignature('actuator-secret-123', received, body, new Date(1700000000_000 + 301_000)), false, 'stale');
  assert.equal(verifyActuatorSignature('actuator-secret-123', { signature: undefined, timestamp: '1' }, body, now), false);
});

test('sealed secrets open only under the same key and refuse tampering', () => {
  const key = randomBytes(32);
  const sealed = sealSecret(key, 'my-actuator-secret');
  assert.doesNotMatch(sealed, /my-actuator-secret/);
  assert.equal(openSecret(key, sealed), 'my-actuator-secret');
  assert.notEqual(sealSecret(key, 'my-actuator-secret'), sealed, 'a fresh IV each time');
  assert.throws(() => openSecret(randomBytes(32), sealed));
  const parts = sealed.split('.');
  parts[3] = Buffer.from('tampered').toString('base64url');
  assert.throws(() => openSecret(key, parts.join('.')));
  assert.throws(() => openSecret(key, 'garbage'), /malformed/);
});

test('actuator URLs: http(s) only, no credentials, never link-local', () => {
  assert.equal(actuatorUrlProblem('http://127.0.0.1:8080/hook'), null);
  assert.equal(actuatorUrlProblem('https://provisioner.example.com/scale'), null);
  assert.match(actuatorUrlProblem('ftp://x/y') ?? '', /http or https/);
  assert.match(actuatorUrlProblem('http://u:p@host/') ?? '', /user or password/);
  assert.match(actuatorUrlProblem('http://169.254.169.254/latest') ?? '', /link-local/);
  assert.match(actuatorUrlProblem('http://[fe80::1]/x') ?? '', /link-local/);
  assert.match(actuatorUrlProblem('not a url') ?? '', /not a URL/);
});

test('actuator URLs: link-local in IPv4-mapped IPv6 or numeric spellings is refused too', () => {
  // The URL parser turns [::ffff:169.254.169.254] into [::ffff:a9fe:a9fe]; a socket to it reaches 169.254.169.254.
  for (const url of [
    'http://[::ffff:169.254.169.254]/latest',
    'http://[::ffff:a9fe:a9fe]/latest',
    'http://[0:0:0:0:0:ffff:a9fe:0101]/',
    'http://2852039166/latest',
    'http://[febf::1]/',
  ])
    assert.match(actuatorUrlProblem(url) ?? '', /link-local/, url);
  assert.equal(actuatorUrlProblem('http://[::ffff:127.0.0.1]:8080/hook'), null);
  assert.equal(actuatorUrlProblem('http://[fec0::1]/hook'), null);
});

test('actuator URLs: the same rules as alarm actions: metadata service names in any spelling, AWS IPv6 metadata', () => {
  for (const url of ['http://metadata.google.internal./computeMetadata/v1/', 'http://[fd00:ec2::254]/latest/meta-data/'])
    assert.match(actuatorUrlProblem(url) ?? '', /^actuator\.url .*is link-local or a cloud metadata service/, url);
});

test('retry delays double from 0.5 s up to the cap', () => {
  assert.deepEqual(
    [1, 2, 3, 4].map((a) => retryDelayMs(a)),
    [500, 1000, 2000, 4000],
  );
  assert.equal(retryDelayMs(30), 30_000);
  assert.equal(retryDelayMs(10, 2000), 2000);
});
