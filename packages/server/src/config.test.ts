import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveSettings } from './config.ts';

test('flags win over HEARTH_* env, env over defaults', () => {
  const { settings, errors } = resolveSettings(
    { listen: '127.0.0.1:9001' },
    { HEARTH_LISTEN: '127.0.0.1:9002', HEARTH_LOG_LEVEL: 'debug' },
  );
  assert.deepEqual(errors, []);
  assert.equal(settings?.port, 9001);
  assert.equal(settings?.logLevel, 'debug');
  assert.equal(settings?.publicUrl, 'http://127.0.0.1:9001');
  assert.equal(settings?.alarmSchedule, undefined);
});

test('HEARTH_ALARM_SCHEDULE is checked as a cron expression and passed on', () => {
  assert.equal(resolveSettings({}, { HEARTH_ALARM_SCHEDULE: '*/30 * * * * *' }).settings?.alarmSchedule, '*/30 * * * * *');
  const bad = resolveSettings({}, { HEARTH_ALARM_SCHEDULE: 'every minute' });
  assert.equal(bad.settings, undefined);
  assert.match(bad.errors.join('\n'), /HEARTH_ALARM_SCHEDULE every minute is not a cron expression/);
});

test('bad listen addresses and log levels are reported, all at once', () => {
  const { settings, errors } = resolveSettings({ listen: 'nowhere', logLevel: 'loud' }, {});
  assert.equal(settings, undefined);
  assert.equal(errors.length, 2);
});
