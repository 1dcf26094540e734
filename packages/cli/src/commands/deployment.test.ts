import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ExitError } from '../errors.ts';
import { progressText } from './deployment-wait.ts';
import { parseAction, shownValues } from './deployment.ts';

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

test('shownValues keeps short values as they are and cuts long ones between characters, never inside an escape', () => {
  const whole = (name: string): string => `hearth deployment output D ${name}`;
  assert.deepEqual(shownValues({ a: 'x' }, whole), { a: 'x' });
  assert.equal(shownValues(null, whole), null);
  const shown = shownValues(
    { text: `${'ab\n'.repeat(66)}a😀${'z'.repeat(500)}`, list: [`x${'\\'.repeat(300)}`], n: 1, long: 'y'.repeat(201) },
    whole,
  );
  assert.equal(
    shown,
    [
      `text: "${'ab\\n'.repeat(66)}a… (700 characters; all of it: hearth deployment output D text)`,
      // The cut fell after the first backslash of an escaped one: that backslash goes.
      `list: ["x${'\\\\'.repeat(98)}… (605 characters as JSON; all of it: hearth deployment output D list)`,
      'n: 1',
      `long: "${'y'.repeat(200)}… (201 characters; all of it: hearth deployment output D long)`,
      '',
    ].join('\n'),
  );
});

test('deployment wait progress names the whole id: UUIDv7 ids made a minute apart share their first 8 digits', () => {
  // Two ids hearth-server gave deployments created 20 s apart.
  const first = '01a21d57-03d5-7789-9d2a-934e83c44b30';
  const second = '01a21d57-65fe-73a6-9b74-0365fb471428';
  assert.equal(progressText(first, 'IN_PROGRESS', 12_400), `deployment ${first}: IN_PROGRESS, 12 s elapsed`);
  assert.notEqual(progressText(first, 'IN_PROGRESS', 0), progressText(second, 'IN_PROGRESS', 0));
});
