import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExitError } from './errors.ts';
import { globalOptionsOrThrow, requireToken, resolveGlobalOptions } from './options.ts';

test('defaults apply when neither flags nor environment say anything', () => {
  const { options, errors } = resolveGlobalOptions({}, {});
  assert.deepEqual(errors, []);
  assert.deepEqual(options, {
    url: 'http://127.0.0.1:8000',
    token: undefined,
    project: 'default',
    json: false,
    sources: { url: 'default', token: 'default', project: 'default' },
  });
});

test('the environment overrides defaults and flags override the environment', () => {
  const env = { HEARTH_URL: 'http://127.0.0.1:9000/', HEARTH_TOKEN: 'envtok', HEARTH_PROJECT: 'envproj' };
  const fromEnv = resolveGlobalOptions({}, env).options;
  assert.equal(fromEnv.url, 'http://127.0.0.1:9000');
  assert.equal(fromEnv.token, 'envtok');
  assert.equal(fromEnv.project, 'envproj');
  const fromFlags = resolveGlobalOptions({ url: 'https://h.test', token: 'flagtok', project: 'p2', json: true }, env).options;
  assert.deepEqual(
    [fromFlags.url, fromFlags.token, fromFlags.project, fromFlags.json, fromFlags.sources.token],
    ['https://h.test', 'flagtok', 'p2', true, 'flag'],
  );
});

test('an empty HEARTH_TOKEN counts as unset', () => {
  assert.equal(resolveGlobalOptions({}, { HEARTH_TOKEN: '' }).options.token, undefined);
  assert.equal(resolveGlobalOptions({}, { HEARTH_URL: '' }).options.url, 'http://127.0.0.1:8000');
});

test('a bad URL or project is reported naming where it came from', () => {
  assert.deepEqual(resolveGlobalOptions({}, { HEARTH_URL: 'localhost:8000' }).errors, [
    'HEARTH_URL "localhost:8000" must start with http:// or https://',
  ]);
  assert.match(resolveGlobalOptions({ url: 'nope' }, {}).errors[0] ?? '', /^--url "nope" is not a URL/);
  assert.match(resolveGlobalOptions({ project: 'a/b' }, {}).errors[0] ?? '', /^--project "a\/b" is not a project id/);
  assert.throws(
    () => globalOptionsOrThrow({ project: 'a b' }, {}),
    (error: unknown) => error instanceof ExitError && error.exitCode === 64,
  );
});

test('requireToken explains how to give the admin token', () => {
  const { options } = resolveGlobalOptions({}, {});
  assert.throws(
    () => requireToken(options),
    (error: unknown) =>
      error instanceof ExitError &&
      error.exitCode === 64 &&
      error.code === 'ERR_AUTH_MISSING' &&
      /HEARTH_TOKEN.*admin-token/.test(error.hint ?? ''),
  );
  assert.equal(requireToken({ ...options, token: 't' }), 't');
});

test('a token that cannot be sent in a header is a usage error naming where it came from, not its value', () => {
  assert.deepEqual(resolveGlobalOptions({ token: 't\nx' }, {}).errors, [
    '--token has a line feed at character 2; a token is printable ASCII without spaces',
  ]);
  assert.match(resolveGlobalOptions({}, { HEARTH_TOKEN: 'sec ret' }).errors[0] ?? '', /^HEARTH_TOKEN has a space at character 4/);
  assert.deepEqual(resolveGlobalOptions({}, { HEARTH_TOKEN: ' AK:secret\n' }).errors, [], 'surrounding blanks are trimmed');
  assert.throws(
    () => globalOptionsOrThrow({ token: 'secret\ttoken' }, {}),
    (error: unknown) => error instanceof ExitError && error.exitCode === 64 && !error.message.includes('secret'),
  );
});

test('a URL with a query or fragment is a usage error: the API paths would land in it', () => {
  for (const url of ['http://127.0.0.1:8000?x=1', 'http://127.0.0.1:8000/#top', 'https://h.test/hearth?']) {
    const errors = resolveGlobalOptions({}, { HEARTH_URL: url }).errors;
    assert.equal(errors.length, 1, url);
    assert.match(
      errors[0] ?? '',
      /^HEARTH_URL "\S+" has a query or fragment: give hearth-server's base URL, e.g. (http:\/\/127\.0\.0\.1:8000|https:\/\/h\.test\/hearth)$/,
    );
  }
  assert.deepEqual(resolveGlobalOptions({ url: 'http://127.0.0.1:8000/hearth/' }, {}).errors, []);
});
