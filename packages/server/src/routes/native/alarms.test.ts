import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Alarm } from '@hearth/protocol';
import { ADMIN, beforeWrite, errorCode, registerServer, testApp } from '../../test-support.ts';

const cpuAlarm = {
  name: 'cpu-high',
  metric_name: 'CPUUtilization',
  dimensions: { AutoScalingGroupName: 'web' },
  statistic: 'Average',
  period: 60,
  evaluation_periods: 3,
  threshold: 80,
  comparison_operator: 'GreaterThanThreshold',
  alarm_actions: ['http://127.0.0.1:9/scale-up'],
};

test('alarms: create, show, list, history, delete; a duplicate name is 409 and an unknown one 404', async () => {
  const { app, done } = await testApp();
  try {
    const created = await app.inject({ method: 'POST', url: '/v1/default/alarms', headers: ADMIN, payload: cpuAlarm });
    assert.equal(created.statusCode, 201, created.body);
    const alarm = created.json<{ alarm: Alarm }>().alarm;
    assert.equal(alarm.state, 'INSUFFICIENT_DATA');
    assert.equal(alarm.namespace, 'system/linux', 'cfn-push-stats namespace by default');
    assert.equal(alarm.evaluation_periods, 3);
    assert.deepEqual(alarm.ok_actions, []);
    assert.equal(alarm.enabled, true);
    assert.deepEqual(alarm.deliveries, { pending: 0, failed: 0, delivered: 0, last_error: null });
    assert.equal(alarm.last_evaluated_at, null);

    const again = await app.inject({ method: 'POST', url: '/v1/default/alarms', headers: ADMIN, payload: cpuAlarm });
    assert.equal(again.statusCode, 409);
    assert.equal(errorCode(again), 'ERR_ALARM_EXISTS');

    const shown = await app.inject({ url: '/v1/default/alarms/cpu-high', headers: ADMIN });
    assert.equal(shown.json().alarm.id, alarm.id);
    const listed = await app.inject({ url: '/v1/default/alarms', headers: ADMIN });
    assert.deepEqual(
      listed.json().alarms.map((a: Alarm) => a.name),
      ['cpu-high'],
    );
    const history = await app.inject({ url: '/v1/default/alarms/cpu-high/history', headers: ADMIN });
    assert.deepEqual(history.json(), { history: [] });
    const events = await app.inject({ url: `/v1/default/events?resource_id=${alarm.id}`, headers: ADMIN });
    assert.deepEqual(
      events.json().events.map((e: { type: string }) => e.type),
      ['alarm.created'],
    );

    const deleted = await app.inject({ method: 'DELETE', url: '/v1/default/alarms/cpu-high', headers: ADMIN });
    assert.equal(deleted.statusCode, 204);
    for (const url of ['/v1/default/alarms/cpu-high', '/v1/default/alarms/cpu-high/history']) {
      const gone = await app.inject({ url, headers: ADMIN });
      assert.equal(gone.statusCode, 404);
      assert.equal(errorCode(gone), 'ERR_ALARM_NOT_FOUND');
    }
    const deleteAgain = await app.inject({ method: 'DELETE', url: '/v1/default/alarms/cpu-high', headers: ADMIN });
    assert.equal(deleteAgain.statusCode, 404);
  } finally {
    await done();
  }
});

test('alarms: bad bodies are 400 with the reason; agents and other projects are refused', async () => {
  const { app, done } = await testApp();
  try {
    const post = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/v1/default/alarms', headers: ADMIN, payload });
    const metadataUrl = await post({ ...cpuAlarm, ok_actions: ['http://169.254.169.254/latest/meta-data/'] });
    assert.equal(metadataUrl.statusCode, 400);
    assert.equal(errorCode(metadataUrl), 'ERR_ALARM_INVALID');
    assert.match(metadataUrl.json().error.message, /ok_actions http:\/\/169\.254\.169\.254.*link-local/);
    const linkLocal6 = await post({ ...cpuAlarm, alarm_actions: ['http://[fe80::1]:80/x'] });
    assert.equal(errorCode(linkLocal6), 'ERR_ALARM_INVALID');
    const tooLong = await post({ ...cpuAlarm, period: 86400, evaluation_periods: 3 });
    assert.equal(errorCode(tooLong), 'ERR_ALARM_INVALID');
    assert.match(tooLong.json().error.message, /259200 s, longer than the 172800 s samples are kept/);
    const badStatistic = await post({ ...cpuAlarm, statistic: 'p99' });
    assert.equal(badStatistic.statusCode, 400);
    const badOperator = await post({ ...cpuAlarm, comparison_operator: 'GreaterThan' });
    assert.equal(badOperator.statusCode, 400);
    const ftp = await post({ ...cpuAlarm, alarm_actions: ['ftp://example.test/'] });
    assert.equal(ftp.statusCode, 400);
    const zeroPeriod = await post({ ...cpuAlarm, period: 0 });
    assert.equal(zeroPeriod.statusCode, 400);

    const vm = await registerServer(app);
    const agent = await app.inject({ method: 'POST', url: '/v1/default/alarms', headers: vm.auth, payload: cpuAlarm });
    assert.equal(agent.statusCode, 403);
    const otherProject = await app.inject({ url: '/v1/nope/alarms', headers: ADMIN });
    assert.equal(otherProject.statusCode, 404);
    const none = await app.inject({ url: '/v1/default/alarms', headers: ADMIN });
    assert.deepEqual(none.json(), { alarms: [] }, 'nothing refused was created');
  } finally {
    await done();
  }
});

test('alarms: an action URL on a link-local address in IPv4-mapped IPv6 is refused at create, nothing stored', async () => {
  const { app, done } = await testApp();
  try {
    for (const url of ['http://[::ffff:169.254.169.254]/latest/meta-data/', 'http://[::ffff:a9fe:a9fe]/']) {
      const created = await app.inject({
        method: 'POST',
        url: '/v1/default/alarms',
        headers: ADMIN,
        payload: { ...cpuAlarm, ok_actions: [url] },
      });
      assert.equal(created.statusCode, 400, created.body);
      assert.equal(errorCode(created), 'ERR_ALARM_INVALID');
      assert.match(created.json().error.message, /link-local/);
    }
    assert.deepEqual((await app.inject({ url: '/v1/default/alarms', headers: ADMIN })).json().alarms, []);
  } finally {
    await done();
  }
});

test('alarms: an action URL naming a metadata service is refused at create as a scaling actuator is, nothing stored', async () => {
  const { app, done } = await testApp();
  try {
    for (const [field, url] of [
      ['alarm_actions', 'http://metadata.google.internal/computeMetadata/v1/instance/'],
      ['ok_actions', 'http://METADATA.google.internal./computeMetadata/v1/'],
      ['insufficient_data_actions', 'http://[fd00:ec2::254]/latest/meta-data/'],
    ] as const) {
      const created = await app.inject({
        method: 'POST',
        url: '/v1/default/alarms',
        headers: ADMIN,
        payload: { ...cpuAlarm, [field]: [url] },
      });
      assert.equal(created.statusCode, 400, created.body);
      assert.equal(errorCode(created), 'ERR_ALARM_INVALID');
      assert.match(created.json().error.message, new RegExp(`${field} .*is link-local or a cloud metadata service`));
    }
    assert.deepEqual((await app.inject({ url: '/v1/default/alarms', headers: ADMIN })).json().alarms, []);
  } finally {
    await done();
  }
});

test('alarms: two deletes at once: the second is a coded 404 and records no second event', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const created = await app.inject({ method: 'POST', url: '/v1/default/alarms', headers: ADMIN, payload: cpuAlarm });
    assert.equal(created.statusCode, 201, created.body);
    const store = app.services.store;
    await app.services.alarmEvaluator.stop(); // its background writes would take the first delete's turn
    // The first delete commits just before the second reaches the writer (the second already found the alarm).
    const first = beforeWrite(store, () => app.inject({ method: 'DELETE', url: '/v1/default/alarms/cpu-high', headers: ADMIN }));
    const second = await app.inject({ method: 'DELETE', url: '/v1/default/alarms/cpu-high', headers: ADMIN });
    assert.equal(first.reply().statusCode, 204, first.reply().body);
    assert.equal(second.statusCode, 404, second.body);
    assert.equal(errorCode(second), 'ERR_ALARM_NOT_FOUND');
    const events = await store.reader.selectFrom('events').select('type').where('type', '=', 'alarm.deleted').execute();
    assert.equal(events.length, 1);
  } finally {
    await done();
  }
});

// The action sender decodes the user and password for basic auth: one with a bad %-escape failed
// every delivery ("URI malformed") of an alarm that had been stored with a 201.
test('alarms: an action URL whose user or password is not %-decodable is a 400 and stores nothing', async () => {
  const { app, done } = await testApp();
  try {
    for (const url of ['http://user:p%zz@127.0.0.1:9/hook', 'http://us%C3@127.0.0.1:9/hook', 'http://u:%E0%A4%A@127.0.0.1:9/hook']) {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/default/alarms',
        headers: ADMIN,
        payload: { ...cpuAlarm, ok_actions: [url] },
      });
      assert.equal(reply.statusCode, 400, `${url}: ${reply.body}`);
      assert.equal(errorCode(reply), 'ERR_ALARM_INVALID');
      assert.match(reply.json().error.message, /ok_actions http:\/\/\*\*\*@127\.0\.0\.1:9\/hook: its user or password has a %/);
      assert.doesNotMatch(reply.body, /p%zz|us%C3/, 'the credentials are not echoed');
    }
    assert.deepEqual((await app.inject({ url: '/v1/default/alarms', headers: ADMIN })).json().alarms, []);
    const encoded = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: { ...cpuAlarm, ok_actions: ['http://user:p%25zz%C3%A9@127.0.0.1:9/hook'] },
    });
    assert.equal(encoded.statusCode, 201, encoded.body);
  } finally {
    await done();
  }
});
