import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExitError } from '../errors.ts';
import { parseAction } from './deployment.ts';

test('--action: Heat five in any case, or a custom action as heatclient takes it; empty, too long or control characters are usage errors', () => {
  assert.equal(parseAction('update'), 'UPDATE');
  assert.equal(parseAction('Resume'), 'RESUME');
  assert.equal(parseAction('INIT'), 'INIT');
  assert.equal(parseAction('rotate-keys'), 'rotate-keys');
  assert.equal(parseAction('A'.repeat(255)), 'A'.repeat(255));
  for (const bad of ['', 'A'.repeat(256), 'bad\naction']) {
    assert.throws(
      () => parseAction(bad),
      (error: unknown) => error instanceof ExitError && error.exitCode === 64 && /is not an action name/.test(error.message),
    );
  }
});
