// A basic-auth alarm action (`http://user:password@host/`, as Aodh takes them): the credentials are
// sent, as an Authorization header, and never shown again: not in the alarm's API replies, its
// delivery errors, a 400's message or the log.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { ADMIN, testApp } from '../test-support.ts';
import { AlarmActionDeliverer, enqueueDeliveries, gotActionPoster } from './alarm-actions.ts';

const SECRET = 'pa55-w0rd-never-shown';

const alarm = {
  name: 'cpu-high',
  metric_name: 'CPUUtilization',
  statistic: 'Average',
  period: 60,
  threshold: 80,
  comparison_operator: 'GreaterThanThreshold',
};

test('alarm actions with a user and password: sent as basic auth, never shown in replies, errors or logs', async () => {
  let log = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      log += chunk.toString();
      callback();
    },
  });
  const { app, done } = await testApp({ logger: { level: 'info', stream } });
  const authorizations: Array<string | undefined> = [];
  const receiver = createServer((request, response) => {
    authorizations.push(request.headers.authorization);
    response.writeHead(500).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    await app.services.alarmEvaluator.stop(); // only this deliverer sends
    const hook = `http://hooks:${SECRET}@127.0.0.1:${(receiver.address() as AddressInfo).port}/alarm`;
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: { ...alarm, alarm_actions: [hook] },
    });
    assert.equal(created.statusCode, 201, created.body);
    assert.ok(!created.body.includes(SECRET), created.body);
    const { alarm: shown } = created.json<{ alarm: { id: string; alarm_actions: string[] } }>();
    assert.deepEqual(shown.alarm_actions, [hook.replace(`hooks:${SECRET}@`, '***@')]);

    const store = app.services.store;
    await store.write(async ({ trx, now }) => enqueueDeliveries(trx, now, shown.id, [hook], '{}'));
    const deliverer = new AlarmActionDeliverer(store, { backoffMs: 1, maxBackoffMs: 1 }, gotActionPoster());
    assert.equal(await deliverer.deliverDue(), 0);
    assert.deepEqual(authorizations, [`Basic ${Buffer.from(`hooks:${SECRET}`).toString('base64')}`]);

    const again = await app.inject({ method: 'GET', url: '/v1/default/alarms/cpu-high', headers: ADMIN });
    assert.ok(!again.body.includes(SECRET), again.body);
    assert.match(
      again.json<{ alarm: { deliveries: { last_error: string } } }>().alarm.deliveries.last_error,
      /^HTTP 500 from http:\/\/\*\*\*@127\.0\.0\.1:/,
    );
    const listed = await app.inject({ method: 'GET', url: '/v1/default/alarms', headers: ADMIN });
    assert.ok(!listed.body.includes(SECRET), listed.body);

    // Refused URLs are named in the 400 (which is logged) without their credentials too.
    for (const refused of [`https://hooks:${SECRET}@100.100.100.200/latest/meta-data/`, `http://hooks:${SECRET}@169.254.169.254/latest/`]) {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/default/alarms',
        headers: ADMIN,
        payload: { ...alarm, name: 'refused', ok_actions: [refused] },
      });
      assert.equal(reply.statusCode, 400, reply.body);
      assert.ok(!reply.body.includes(SECRET), reply.body);
      assert.match(reply.body, /\*\*\*@/);
    }
    const events = await app.inject({ method: 'GET', url: '/v1/default/events', headers: ADMIN });
    assert.ok(!events.body.includes(SECRET), events.body);
    assert.ok(log.includes('ERR_ALARM_INVALID'), 'the 400s were logged');
    assert.ok(!log.includes(SECRET), 'the log never shows the password');
  } finally {
    receiver.close();
    await done();
  }
});
