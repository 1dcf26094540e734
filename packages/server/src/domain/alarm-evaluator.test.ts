import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { Alarm } from '@hearth/protocol';
import { ADMIN, alarmReceiver, appOn, registerServer, testStore, type TestStore } from '../test-support.ts';
import type { AlarmSettings } from './alarm-services.ts';
import { ALARM_EVALUATOR_LEASE } from '../store/migrations/0004_metrics_alarms.ts';

/** Never fires during a test: runs are driven by runOnce(). */
const MANUAL = '0 0 1 1 *';

function alarmApp(storage: TestStore, settings: AlarmSettings = {}): Promise<FastifyInstance> {
  return appOn(storage, { alarms: { ...settings, evaluator: { schedule: MANUAL, ...settings.evaluator } } });
}

async function putCpu(app: FastifyInstance, auth: { authorization: string }, ...values: number[]) {
  const reply = await app.inject({
    method: 'POST',
    url: '/v1/guest/metrics',
    headers: auth,
    payload: {
      samples: values.map((value) => ({ metric_name: 'CPUUtilization', value, dimensions: { group: 'web', InstanceId: 'i-1' } })),
    },
  });
  assert.equal(reply.statusCode, 200, reply.body);
}

const showAlarm = async (app: FastifyInstance, name: string) =>
  (await app.inject({ url: `/v1/default/alarms/${name}`, headers: ADMIN })).json<{ alarm: Alarm }>().alarm;

test('samples above the threshold move the alarm to ALARM; each state change is recorded and its action POSTed once', async () => {
  const storage = await testStore('hearth-alarm-');
  const hook = await alarmReceiver();
  const app = await alarmApp(storage);
  try {
    const vm = await registerServer(app);
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: {
        name: 'cpu-high',
        metric_name: 'CPUUtilization',
        dimensions: { group: 'web' },
        statistic: 'Average',
        period: 60,
        threshold: 80,
        comparison_operator: 'GreaterThanThreshold',
        alarm_actions: [hook.url],
        ok_actions: [hook.url],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const evaluator = app.services.alarmEvaluator;

    const first = await evaluator.runOnce();
    assert.deepEqual(
      { ...first, pruned: 0 },
      { leader: true, evaluated: 1, changed: 0, repeated: 0, pruned: 0, delivered: 0 },
      'no data, still INSUFFICIENT_DATA',
    );

    await putCpu(app, vm.auth, 85, 95);
    const alarmed = await evaluator.runOnce();
    assert.equal(alarmed.changed, 1);
    assert.equal(alarmed.delivered, 1);
    const shown = await showAlarm(app, 'cpu-high');
    assert.equal(shown.state, 'ALARM');
    assert.match(shown.state_reason, /Average > 80; most recent 90/);
    assert.deepEqual(shown.deliveries, { pending: 0, failed: 0, delivered: 1, last_error: null });
    assert.deepEqual(
      hook.bodies.map((b) => [b.alarm_name, b.previous, b.current]),
      [['cpu-high', 'insufficient data', 'alarm']],
    );
    assert.equal(hook.bodies[0]!.alarm_id, shown.id);
    assert.equal(hook.bodies[0]!.reason_data.most_recent, 90);

    const still = await evaluator.runOnce();
    assert.equal(still.changed, 0);
    assert.equal(hook.bodies.length, 1, 'no action while the state stays ALARM');

    await putCpu(app, vm.auth, 10, 10, 10, 10);
    await evaluator.runOnce();
    assert.equal((await showAlarm(app, 'cpu-high')).state, 'OK');
    assert.deepEqual(
      hook.bodies.map((b) => b.current),
      ['alarm', 'ok'],
    );
    const history = (await app.inject({ url: '/v1/default/alarms/cpu-high/history', headers: ADMIN })).json().history;
    assert.deepEqual(
      history.map((h: { previous: string; current: string }) => `${h.previous}->${h.current}`),
      ['ALARM->OK', 'INSUFFICIENT_DATA->ALARM'],
    );
    assert.equal(Object.values(history[0].data.datapoints as Record<string, number>)[0], (85 + 95 + 4 * 10) / 6);
    const events = await app.inject({ url: `/v1/default/events?resource_id=${shown.id}&type=alarm.state_changed`, headers: ADMIN });
    assert.equal(events.json().events.length, 2);
  } finally {
    await app.close();
    hook.server.close();
    await storage.remove();
  }
});

test('repeat_actions: a sustained state queues its actions again once per period, not on every run', async () => {
  const storage = await testStore('hearth-alarm-');
  const hook = await alarmReceiver();
  const app = await alarmApp(storage);
  try {
    const vm = await registerServer(app);
    const t0 = Date.now();
    const create = (name: string, repeat: boolean) =>
      app.inject({
        method: 'POST',
        url: '/v1/default/alarms',
        headers: ADMIN,
        payload: {
          name,
          metric_name: 'CPUUtilization',
          dimensions: { group: 'web' },
          statistic: 'Maximum',
          period: 60,
          threshold: 80,
          comparison_operator: 'GreaterThanThreshold',
          alarm_actions: [`${hook.url}/${name}`],
          ...(repeat ? { repeat_actions: true } : {}),
        },
      });
    const created = await create('cpu-sustained', true);
    assert.equal(created.statusCode, 201, created.body);
    assert.equal(created.json<{ alarm: Alarm }>().alarm.repeat_actions, true);
    assert.equal((await create('cpu-once', false)).json<{ alarm: Alarm }>().alarm.repeat_actions, false);
    const at = (seconds: number) => new Date(t0 + seconds * 1000);
    const putAt = async (seconds: number) => {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/guest/metrics',
        headers: vm.auth,
        payload: {
          samples: [{ metric_name: 'CPUUtilization', value: 95, dimensions: { group: 'web' }, timestamp: at(seconds).toISOString() }],
        },
      });
      assert.equal(reply.statusCode, 200, reply.body);
    };
    const evaluator = app.services.alarmEvaluator;
    await putAt(0);
    assert.equal((await evaluator.runOnce(at(1))).changed, 2);
    assert.equal((await evaluator.runOnce(at(30))).repeated, 0, 'less than a period since the change');
    await putAt(70);
    const later = await evaluator.runOnce(at(75));
    assert.deepEqual([later.changed, later.repeated], [0, 1], 'a period on, still ALARM: only the repeating alarm notifies');
    assert.equal((await evaluator.runOnce(at(80))).repeated, 0, 'not again within the period');
    await putAt(130);
    assert.equal((await evaluator.runOnce(at(136))).repeated, 1);
    // The two alarms of one run are delivered in id order: compare as sorted lists.
    assert.deepEqual(hook.bodies.map((b) => `${b.alarm_name}: ${b.previous} -> ${b.current}`).sort(), [
      'cpu-once: insufficient data -> alarm',
      'cpu-sustained: alarm -> alarm',
      'cpu-sustained: alarm -> alarm',
      'cpu-sustained: insufficient data -> alarm',
    ]);
    const shown = await showAlarm(app, 'cpu-sustained');
    assert.deepEqual(shown.deliveries, { pending: 0, failed: 0, delivered: 3, last_error: null });
    const history = (await app.inject({ url: '/v1/default/alarms/cpu-sustained/history', headers: ADMIN })).json().history;
    assert.equal(history.length, 1, 'a repeat is not a state change');
    const repeats = await app.inject({ url: `/v1/default/events?resource_id=${shown.id}&type=alarm.actions_repeated`, headers: ADMIN });
    assert.equal(repeats.json().events.length, 2);
  } finally {
    await app.close();
    hook.server.close();
    await storage.remove();
  }
});

test('a receiver that is down gets every change, in order, once it is back; a disabled alarm is not evaluated', async () => {
  const storage = await testStore('hearth-alarm-');
  const hook = await alarmReceiver();
  const app = await alarmApp(storage, { delivery: { backoffMs: 1, maxBackoffMs: 1 } });
  try {
    const vm = await registerServer(app);
    const base = { metric_name: 'CPUUtilization', statistic: 'Maximum', period: 60, comparison_operator: 'GreaterThanThreshold' };
    for (const payload of [
      { ...base, name: 'hot', threshold: 50, alarm_actions: [hook.url], ok_actions: [hook.url] },
      { ...base, name: 'off', threshold: 50, enabled: false },
    ]) {
      assert.equal((await app.inject({ method: 'POST', url: '/v1/default/alarms', headers: ADMIN, payload })).statusCode, 201);
    }
    hook.status.code = 503;
    await putCpu(app, vm.auth, 70);
    const run = await app.services.alarmEvaluator.runOnce();
    assert.equal(run.evaluated, 1, 'only the enabled alarm');
    assert.equal(run.delivered, 0);
    let shown = await showAlarm(app, 'hot');
    assert.equal(shown.state, 'ALARM');
    assert.equal(shown.deliveries.pending, 1);
    assert.match(shown.deliveries.last_error ?? '', /HTTP 503/);

    // Back to OK while the receiver is still down: the OK waits behind the ALARM.
    await app.services.store.write(async ({ trx }) => {
      await trx.updateTable('metric_samples').set({ value: 1 }).execute();
    });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await app.services.alarmEvaluator.runOnce();
    shown = await showAlarm(app, 'hot');
    assert.equal(shown.state, 'OK');
    assert.equal(shown.deliveries.pending, 2);
    assert.equal(hook.bodies.length, 0);

    hook.status.code = 204;
    await new Promise((resolve) => setTimeout(resolve, 5));
    await app.services.alarmEvaluator.runOnce();
    assert.deepEqual(
      hook.bodies.map((b) => `${b.previous}->${b.current}`),
      ['insufficient data->alarm', 'alarm->ok'],
    );
    assert.equal((await showAlarm(app, 'hot')).deliveries.delivered, 2);
    assert.equal((await showAlarm(app, 'off')).state, 'INSUFFICIENT_DATA');
  } finally {
    await app.close();
    hook.server.close();
    await storage.remove();
  }
});

test('one evaluator across processes sharing a database: the lease, its expiry and its hand-over', async () => {
  const storage = await testStore('hearth-alarm-');
  const a = await alarmApp(storage, { evaluator: { holderId: 'process-a', leaseSeconds: 30 } });
  const b = await alarmApp(storage, { evaluator: { holderId: 'process-b', leaseSeconds: 30 } });
  try {
    const lease = async () =>
      a.services.store.reader.selectFrom('alarm_leases').selectAll().where('name', '=', ALARM_EVALUATOR_LEASE).executeTakeFirstOrThrow();
    assert.equal((await a.services.alarmEvaluator.runOnce()).leader, true);
    assert.equal((await b.services.alarmEvaluator.runOnce()).leader, false);
    const runs = await Promise.all([
      a.services.alarmEvaluator.acquire(),
      b.services.alarmEvaluator.acquire(),
      a.services.alarmEvaluator.acquire(),
    ]);
    assert.deepEqual(runs, [true, false, true], 'the holder renews, the other is refused');
    assert.equal((await lease()).holder, 'process-a');

    // A holder that stopped renewing (crashed) loses the lease once it expires.
    await a.services.store.write(async ({ trx }) => {
      await trx.updateTable('alarm_leases').set({ expires_at: '2000-01-01T00:00:00.000Z' }).execute();
    });
    assert.equal((await b.services.alarmEvaluator.runOnce()).leader, true);
    assert.equal((await a.services.alarmEvaluator.runOnce()).leader, false, 'the old holder does not take it back');
    assert.equal((await lease()).holder, 'process-b');

    // A clean stop hands the lease over at once, even to a process asking in the same millisecond.
    const stoppedAt = Date.now();
    await b.services.alarmEvaluator.stop();
    assert.ok(Date.parse((await lease()).expires_at) < stoppedAt, 'a released lease has expired before the stop');
    assert.equal((await a.services.alarmEvaluator.runOnce()).leader, true);
  } finally {
    await b.close();
    await a.close();
    await storage.remove();
  }
});

test('samples past the retention limits (count, age) are pruned by the evaluator', async () => {
  const storage = await testStore('hearth-alarm-');
  const app = await alarmApp(storage, { retention: { maxSamples: 3, maxAgeSeconds: 3600 } });
  try {
    const vm = await registerServer(app);
    await putCpu(app, vm.auth, 1, 2, 3, 4, 5);
    const run = await app.services.alarmEvaluator.runOnce();
    assert.equal(run.pruned, 2);
    const left = (await app.inject({ url: '/v1/default/metrics', headers: ADMIN })).json().samples as Array<{ value: number }>;
    assert.deepEqual(left.map((s) => s.value).sort(), [3, 4, 5], 'the oldest went first');
    await app.services.store.write(async ({ trx }) => {
      await trx.updateTable('metric_samples').set({ time: '2001-01-01T00:00:00.000Z' }).where('value', '=', 3).execute();
    });
    assert.equal((await app.services.alarmEvaluator.runOnce()).pruned, 1);
    const tooOld = await app.inject({
      method: 'POST',
      url: '/v1/guest/metrics',
      headers: vm.auth,
      payload: { samples: [{ metric_name: 'X', value: 1, timestamp: new Date(Date.now() - 7200_000).toISOString() }] },
    });
    assert.equal(tooOld.statusCode, 400, 'a sample older than the retention is refused on the way in');
  } finally {
    await app.close();
    await storage.remove();
  }
});
