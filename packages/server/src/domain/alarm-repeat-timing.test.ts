import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, alarmReceiver, appOn, testStore } from '../test-support.ts';

test('repeat_actions repeat every period although each scheduled run starts a few ms later or earlier in its second', async () => {
  const storage = await testStore('hearth-alarm-');
  const { url: hookUrl, bodies, server: hook } = await alarmReceiver();
  const app = await appOn(storage, {
    // Never fires during the test: runs are driven by runOnce().
    alarms: { evaluator: { schedule: '0 0 1 1 *' } },
  });
  try {
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: {
        name: 'always',
        metric_name: 'Heartbeat',
        // The SampleCount of no samples is 0: ALARM from the first run, and it stays.
        statistic: 'SampleCount',
        period: 10,
        threshold: 0,
        comparison_operator: 'GreaterThanOrEqualToThreshold',
        repeat_actions: true,
        alarm_actions: [hookUrl],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    // Runs of a `*/10 * * * * *` schedule: on the second, plus what the run took to read the clock.
    const t0 = Math.ceil(Date.now() / 1000) * 1000;
    const run = (ms: number) => app.services.alarmEvaluator.runOnce(new Date(t0 + ms));
    assert.equal((await run(40)).changed, 1);
    const repeats: number[] = [];
    for (const ms of [10_005, 20_031, 29_998, 40_012, 45_012]) repeats.push((await run(ms)).repeated);
    assert.deepEqual(repeats, [1, 1, 1, 1, 0], 'one repeat a period (10 s), none half a period on');
    assert.deepEqual(
      bodies.map((b) => `${b.previous} -> ${b.current}`),
      ['insufficient data -> alarm', 'alarm -> alarm', 'alarm -> alarm', 'alarm -> alarm', 'alarm -> alarm'],
    );
  } finally {
    await app.close();
    hook.close();
    await storage.remove();
  }
});
