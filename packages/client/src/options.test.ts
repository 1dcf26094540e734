import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeClientOptions, tokenProblem } from './options.ts';
import { guestPath, projectPath } from './paths.ts';

test('defaults: project default, 30 s timeout, 2 retries, trailing slash dropped', () => {
  const options = normalizeClientOptions({ url: 'http://127.0.0.1:8000/', token: 't' });
  assert.deepEqual(options, {
    baseUrl: 'http://127.0.0.1:8000',
    token: 't',
    project: 'default',
    timeoutMs: 30_000,
    retry: 2,
    userAgent: 'hearth-client/0.1.0',
  });
});

test('a path prefix in the URL is kept and an empty token counts as none', () => {
  const options = normalizeClientOptions({ url: 'https://example.test/hearth', token: '' });
  assert.equal(options.baseUrl, 'https://example.test/hearth');
  assert.equal(options.token, undefined);
});

test('bad options are rejected naming the value', () => {
  assert.throws(() => normalizeClientOptions({ url: 'localhost:8000' }), /localhost:8000.*http/);
  assert.throws(() => normalizeClientOptions({ url: 'not a url' }), /"not a url" is not a URL/);
  assert.throws(() => normalizeClientOptions({ url: 'http://x', timeoutMs: 0 }), /timeoutMs 0/);
  assert.throws(() => normalizeClientOptions({ url: 'http://x', retry: -1 }), /retry -1/);
});

test('paths percent-encode each segment', () => {
  assert.equal(projectPath('default', 'servers', 'a/b c'), '/v1/default/servers/a%2Fb%20c');
  assert.equal(guestPath('deployments', 'd1', 'signal'), '/v1/guest/deployments/d1/signal');
});

test('a token that cannot go in a header is refused, naming the character and its place but not the token', () => {
  assert.equal(tokenProblem('AKIA1:s3cr3t/+='), undefined);
  assert.equal(tokenProblem('t\nx'), 'has a line feed at character 2; a token is printable ASCII without spaces');
  assert.match(tokenProblem('ab c') ?? '', /a space at character 3/);
  assert.match(tokenProblem('tok\u00e9') ?? '', /U\+00E9 at character 4/);
  assert.throws(
    () => normalizeClientOptions({ url: 'http://x', token: 'secret\rtoken' }),
    (error: unknown) =>
      error instanceof TypeError && /carriage return at character 7/.test(error.message) && !error.message.includes('secret'),
  );
});
