// The count bound of the events retention as an operator sets it: --events-max-per-project and
// HEARTH_EVENTS_MAX_PER_PROJECT, parsed like --events-retention-days (config.test.ts, bin.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveSettings } from './config.ts';
import { hearthServer, withDir } from './bin-test-support.ts';

test('events per project: 1,000,000 by default, the flag over HEARTH_EVENTS_MAX_PER_PROJECT, 0 sets no bound', () => {
  assert.equal(resolveSettings({}, {}).settings?.eventsMaxPerProject, 1_000_000);
  assert.equal(resolveSettings({}, { HEARTH_EVENTS_MAX_PER_PROJECT: '' }).settings?.eventsMaxPerProject, 1_000_000);
  assert.equal(resolveSettings({}, { HEARTH_EVENTS_MAX_PER_PROJECT: '5000' }).settings?.eventsMaxPerProject, 5000);
  assert.equal(resolveSettings({ eventsMaxPerProject: '0' }, { HEARTH_EVENTS_MAX_PER_PROJECT: '7' }).settings?.eventsMaxPerProject, 0);
  assert.equal(resolveSettings({ eventsMaxPerProject: '1000000000' }, {}).settings?.eventsMaxPerProject, 1_000_000_000);
});

test('an events count bound that is not a whole number from 0 to 1000000000 is refused, naming the flag and the variable', () => {
  for (const value of ['-1', '1.5', '1000000001', '99999999999', 'lots', ' 30', '1e6', '1_000', '']) {
    const { settings, errors } = resolveSettings({ eventsMaxPerProject: value }, {});
    assert.equal(settings, undefined, value);
    assert.equal(errors.length, 1, value);
    assert.match(
      errors[0]!,
      /^--events-max-per-project \(env HEARTH_EVENTS_MAX_PER_PROJECT\) ".*" is not a whole number of events from 0 to 1000000000 \(0 sets no bound; default 1000000\)$/,
    );
  }
  assert.match(resolveSettings({}, { HEARTH_EVENTS_MAX_PER_PROJECT: 'x' }).errors.join('\n'), /HEARTH_EVENTS_MAX_PER_PROJECT\) "x"/);
});

test(
  'hearth-server serve with a bad events count bound: exit 64, one line naming the flag and the variable; serve --help shows it',
  withDir(async (dir) => {
    const keys = { HEARTH_ADMIN_TOKEN: 'test-admin-token', HEARTH_SECRET_KEY: 'test-secret-key-0123456789abcdef' };
    for (const [args, env] of [
      [['--events-max-per-project', '-3'], {}],
      [[], { HEARTH_EVENTS_MAX_PER_PROJECT: '1M' }],
    ] as const) {
      const { code, stderr } = await hearthServer(
        ['serve', '--listen', '127.0.0.1:0', '--public-url', 'http://127.0.0.1', '--data-dir', dir, ...args],
        { ...keys, ...env },
      );
      assert.equal(code, 64, stderr);
      assert.match(
        stderr,
        /^hearth-server: --events-max-per-project \(env HEARTH_EVENTS_MAX_PER_PROJECT\) "(-3|1M)" is not a whole number of events from 0 to 1000000000 \(0 sets no bound; default 1000000\)\n$/,
      );
    }
    const help = await hearthServer(['serve', '--help']);
    assert.equal(help.code, 0);
    assert.match(
      help.stdout,
      /--events-max-per-project <count>\s+events kept per project.*\(env\s+HEARTH_EVENTS_MAX_PER_PROJECT, default\s+1000000\)/s,
    );
  }),
);
