import { test } from 'node:test';
import assert from 'node:assert/strict';
import { acceptedStatusCode, MAX_STATUS_CODE_CHARS } from './status-code.ts';

test('integers, null, absent and short strings are sent as they are', () => {
  for (const data of [
    { deploy_status_code: 0 },
    { deploy_status_code: -9 },
    { deploy_status_code: null },
    {},
    { deploy_status_code: 'E42' },
  ]) {
    const accepted = acceptedStatusCode(data);
    assert.equal(accepted.changed, false);
    assert.equal(accepted.data, data);
  }
});

test('a long message, a float, a boolean or an object becomes a short string the server schema accepts; the whole text goes to deploy_stderr', () => {
  const message = 'Error: the service failed to start because its port 8080 is already in use by another process';
  for (const [code, shown] of [
    [message, message],
    [1.5, '1.5'],
    [Infinity, 'Infinity'],
    [false, 'false'],
    [{ reason: 'x' }, '{"reason":"x"}'],
    ['😀'.repeat(40), '😀'.repeat(40)],
  ] as const) {
    const { data, changed } = acceptedStatusCode({ deploy_stdout: '', deploy_stderr: 'boom', deploy_status_code: code });
    assert.equal(changed, true);
    // hearth-server's schema: an integer, null, or a string of at most 64 characters.
    assert.ok(typeof data.deploy_status_code === 'string' && data.deploy_status_code.length <= MAX_STATUS_CODE_CHARS);
    assert.ok(shown.startsWith(data.deploy_status_code));
    assert.notEqual(data.deploy_status_code, '0', 'still a failure');
    assert.equal(data.deploy_stderr, `boom\n[heat-config-notify: deploy_status_code was ${shown}]\n`);
  }
});
