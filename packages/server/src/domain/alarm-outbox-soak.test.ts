import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, alarmReceiver, appOn, registerServer, testStore } from '../test-support.ts';

/** Never fires during a test: runs are driven by runOnce(). */
const MANUAL = '0 0 1 1 *';

// An alarm lives for months. Each state change wrote a history row and each action POST an outbox
// row, kept until the alarm was deleted: a flapping alarm (or one repeating its actions every period)
// grew both tables without end, and every show of the alarm read all its deliveries to count them.
test('a flapping alarm keeps its newest history and its recent deliveries only, and every change is still delivered', async () => {
  const storage = await testStore('hearth-alarm-');
  const { url: hookUrl, bodies, server: hook } = await alarmReceiver();
  const app = await appOn(storage, {
    alarms: { evaluator: { schedule: MANUAL, historyKept: 5 }, delivery: { keepDoneMs: 0 } },
  });
  try {
    const vm = await registerServer(app);
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: {
        name: 'flapping',
        metric_name: 'CPUUtilization',
        statistic: 'Maximum',
        period: 10,
        threshold: 50,
        comparison_operator: 'GreaterThanThreshold',
        alarm_actions: [hookUrl],
        ok_actions: [hookUrl],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const alarmId = created.json<{ alarm: { id: string } }>().alarm.id;
    const t0 = Date.now();
    const at = (seconds: number) => new Date(t0 + seconds * 1000);
    const flips = 30;
    for (let k = 0; k < flips; k++) {
      const put = await app.inject({
        method: 'POST',
        url: '/v1/guest/metrics',
        headers: vm.auth,
        payload: { samples: [{ metric_name: 'CPUUtilization', value: k % 2 === 0 ? 95 : 5, timestamp: at(k * 20).toISOString() }] },
      });
      assert.equal(put.statusCode, 200, put.body);
      const run = await app.services.alarmEvaluator.runOnce(at(k * 20 + 5));
      assert.equal(run.changed, 1, `flip ${k}`);
    }
    assert.equal(bodies.length, flips, 'every change was delivered');
    const count = async (table: 'alarm_history' | 'alarm_deliveries') =>
      Number(
        (
          await app.services.store.reader
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('alarm_id', '=', alarmId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.equal(await count('alarm_history'), 5, 'the newest state changes only');
    assert.ok((await count('alarm_deliveries')) <= 1, 'deliveries done are not kept past keepDoneMs');
    const history = await app.inject({ url: '/v1/default/alarms/flapping/history', headers: ADMIN });
    const items = history.json<{ history: Array<{ current: string }> }>().history;
    assert.equal(items.length, 5);
    assert.equal(items[0]!.current, flips % 2 === 0 ? 'OK' : 'ALARM', 'the newest first');
  } finally {
    await app.close();
    hook.close();
    await storage.remove();
  }
});
