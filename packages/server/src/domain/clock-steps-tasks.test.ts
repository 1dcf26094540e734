// Durations that rate-limit background tasks' log lines and time alarm repeats were differences of
// Date.now(): a step of the wall clock back (NTP, often right after boot) silenced a failing task's
// reminders, and held off an alarm's repeated actions, for the size of the step. They are measured on
// the monotonic clock now (stored times stay wall-clock). The step is made in-process: `Date` (Date.now
// and `new Date()`) is offset; timers and performance.now() are not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN, alarmReceiver, appOn, testApp, testStore } from '../test-support.ts';
import { AlarmActionDeliverer, enqueueDeliveries } from './alarm-actions.ts';
import { TaskHealth, type TaskNotice } from './task-health.ts';
import { steppableWallClock } from '../test-support-clock.ts';

const HOUR_MS = 3_600_000;

test('task health: a failing task is still reminded of after its period when the wall clock stepped back', async () => {
  const lines: TaskNotice[] = [];
  const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  const clock = steppableWallClock();
  try {
    const health = new TaskHealth('deadline sweeper', (notice) => lines.push(notice as TaskNotice), 200);
    health.failed(down);
    assert.equal(lines.length, 1);
    clock.step(-HOUR_MS);
    await sleep(300);
    health.failed(down);
    assert.equal(lines.length, 2, 'a reminder a period (200 ms) later');
    assert.match(lines[1]!.message, /still failing .*: 2 failed runs in 0 min/);
    health.succeeded();
  } finally {
    clock.restore();
  }
  assert.match(lines[2]!.message, /^deadline sweeper works again, after 2 failed runs in 0 s$/);
});

test('alarm repeat_actions: the actions repeat a period on when the wall clock stepped back meanwhile', async () => {
  const storage = await testStore('hearth-alarm-');
  const { url: hookUrl, bodies, server: hook } = await alarmReceiver();
  const app = await appOn(storage, {
    // Never fires during the test: runs are driven by runOnce(), on the real clocks.
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
        period: 1,
        threshold: 0,
        comparison_operator: 'GreaterThanOrEqualToThreshold',
        repeat_actions: true,
        alarm_actions: [hookUrl],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const evaluator = app.services.alarmEvaluator;
    assert.equal((await evaluator.runOnce()).changed, 1);
    const clock = steppableWallClock();
    try {
      clock.step(-HOUR_MS);
      await sleep(1_200);
      const run = await evaluator.runOnce();
      assert.equal(run.changed, 0);
      assert.equal(run.repeated, 1, 'a period (1 s) after the actions were sent, they are sent again');
      assert.equal((await evaluator.runOnce()).repeated, 0, 'not again within the period');
    } finally {
      clock.restore();
    }
    assert.deepEqual(
      bodies.map((b) => `${b.previous} -> ${b.current}`),
      ['insufficient data -> alarm', 'alarm -> alarm'],
    );
  } finally {
    await app.close();
    hook.close();
    await storage.remove();
  }
});

test('alarm deliveries stop at their monotonic stop time when the wall clock steps back during a slow POST', async () => {
  const { app, done } = await testApp();
  const clock = steppableWallClock();
  const hits: string[] = [];
  const receiver = createServer((request, response) => {
    request.resume();
    hits.push(request.url!);
    if (hits.length === 1) clock.step(-HOUR_MS); // NTP steps the clock back while the first POST is out
    setTimeout(() => response.writeHead(204).end(), 400);
  });
  try {
    await app.services.alarmEvaluator.stop(); // only this deliverer sends
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const { port } = receiver.address() as AddressInfo;
    const urls = ['/a', '/b', '/c'].map((path) => `http://127.0.0.1:${port}${path}`);
    const store = app.services.store;
    await store.write(async ({ trx, now }) => enqueueDeliveries(trx, now, 'alarm-1', urls, '{}'));
    // A stop 300 ms ahead: the first POST (400 ms) outlasts it, and nothing is sent after it, the step notwithstanding.
    const delivered = await new AlarmActionDeliverer(store, { backoffMs: 1, maxBackoffMs: 1 }).deliverDue(
      new Date(Date.now() + 10),
      performance.now() + 300,
    );
    assert.equal(delivered, 1);
    assert.deepEqual(hits, ['/a']);
  } finally {
    clock.restore();
    receiver.close();
    await done();
  }
});
