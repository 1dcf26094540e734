import { test } from 'node:test';
import { createServer, type AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { apiErrorFromReply, connectionErrorFrom, formatDuration, isErrorBody } from './error-mapping.ts';
import { HearthApiError, HearthConnectionError, isHearthClientError } from './errors.ts';
import { createClient } from './client.ts';

const target = { method: 'GET', url: 'http://127.0.0.1:8000/v1/default/servers/x' };

test('a hearth error body becomes a HearthApiError with its code, message and details', () => {
  const bodyText = JSON.stringify({
    code: 404,
    title: 'Not Found',
    explanation: 'x',
    error: { code: 'ERR_SERVER_NOT_FOUND', type: 'NotFound', message: 'Server x does not exist in this project.', details: { id: 'x' } },
  });
  const error = apiErrorFromReply({ ...target, status: 404, bodyText });
  assert.ok(error instanceof HearthApiError);
  assert.equal(error.status, 404);
  assert.equal(error.code, 'ERR_SERVER_NOT_FOUND');
  assert.equal(error.message, 'Server x does not exist in this project.');
  assert.deepEqual(error.details, { id: 'x' });
  assert.ok(isHearthClientError(error));
});

test('a foreign error body becomes ERR_RESPONSE_INVALID quoting the body', () => {
  const error = apiErrorFromReply({ ...target, status: 502, bodyText: '<html>Bad gateway</html>' });
  assert.equal(error.code, 'ERR_RESPONSE_INVALID');
  assert.equal(error.status, 502);
  assert.match(error.message, /HTTP 502.*Bad gateway.*HEARTH_URL/);
});

test('isErrorBody needs error.code and error.message strings', () => {
  assert.equal(isErrorBody({ error: { code: 'ERR_X', message: 'm' } }), true);
  assert.equal(isErrorBody({ error: { code: 1, message: 'm' } }), false);
  assert.equal(isErrorBody('ERR_X'), false);
  assert.equal(isErrorBody(null), false);
});

test('a refused connection becomes ERR_CONNECTION naming the URL and HEARTH_URL', () => {
  const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  const error = connectionErrorFrom(cause, { ...target, baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000 });
  assert.ok(error instanceof HearthConnectionError);
  assert.equal(error.code, 'ERR_CONNECTION');
  assert.equal(error.causeCode, 'ECONNREFUSED');
  assert.equal(error.status, 0);
  assert.match(error.message, /http:\/\/127\.0\.0\.1:9.*ECONNREFUSED.*HEARTH_URL/);
});

test('a timed-out call becomes ERR_TIMEOUT', () => {
  const cause = Object.assign(new Error('Timeout'), { code: 'ETIMEDOUT' });
  const error = connectionErrorFrom(cause, { ...target, baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000 });
  assert.equal(error.code, 'ERR_TIMEOUT');
  assert.match(error.message, /within 1 s: check HEARTH_URL/);
});

test('a timeout after retries gives the time of each attempt and their number', () => {
  const cause = Object.assign(new Error('Timeout'), { code: 'ETIMEDOUT' });
  const error = connectionErrorFrom(cause, { ...target, baseUrl: 'http://127.0.0.1:9', timeoutMs: 30_000, attempts: 3 });
  assert.match(error.message, /did not answer GET \S+ within 30 s on each of 3 attempts:/);
  assert.equal(formatDuration(800), '800 ms');
  assert.equal(formatDuration(2500), '2.5 s');
  assert.equal(formatDuration(60_000), '60 s');
});

test('an untrusted certificate becomes ERR_TLS naming the cause and NODE_EXTRA_CA_CERTS', () => {
  for (const causeCode of ['DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
    const cause = Object.assign(new Error('self-signed certificate'), { code: causeCode });
    const error = connectionErrorFrom(cause, { ...target, baseUrl: 'https://127.0.0.1:9', timeoutMs: 1000 });
    assert.equal(error.code, 'ERR_TLS', causeCode);
    assert.equal(error.causeCode, causeCode);
    assert.equal(
      error.message,
      `the TLS certificate of hearth-server at https://127.0.0.1:9 is not trusted (${causeCode}: self-signed certificate): ` +
        'give Node its CA with NODE_EXTRA_CA_CERTS=/path/to/ca.pem, or check that HEARTH_URL names the host the certificate is for.',
    );
  }
});

test('a connection cut while the body is sent is reported as cut (stopped, or a body over the limit), not as a server to start', async () => {
  // A real listener on 127.0.0.1 that takes the connection, reads a little and then resets it, as a server
  // does when it refuses a body over its limit or stops.
  const listener = createServer((socket) => socket.once('data', () => socket.resetAndDestroy()));
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const { port } = listener.address() as AddressInfo;
  try {
    const client = createClient({ url: `http://127.0.0.1:${port}`, token: 't', retry: 0 });
    const error = await client.createConfig({ name: 'big', group: 'script', config: 'x'.repeat(4 * 1024 * 1024) }).then(
      () => assert.fail('the call succeeded'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof HearthConnectionError, String(error));
    assert.equal(error.code, 'ERR_CONNECTION');
    assert.match(error.causeCode, /^(EPIPE|ECONNRESET)$/);
    assert.match(
      error.message,
      /cut the connection during POST \S*software_configs \((EPIPE|ECONNRESET)\): it stopped, or the request body was over its limit/,
    );
  } finally {
    await new Promise((resolve) => listener.close(resolve));
  }
});
