// An alarm action answered with a redirect, and a stored action URL the outbound-URL rule refuses
// (saved before the rule knew its spelling), fail at their first attempt with the reason: neither
// can get better by retrying, and a redirect is never followed. Real HTTP on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ADMIN, testApp } from '../test-support.ts';
import { AlarmActionDeliverer, enqueueDeliveries, gotActionPoster, type ActionPoster } from './alarm-actions.ts';

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

/** The deliverer's own poster, refusing (failing the test) anything but 127.0.0.1. */
const loopbackOnly = (sent: string[]): ActionPoster => {
  const post = gotActionPoster();
  return (url, body, timeoutMs) => {
    sent.push(url);
    assert.equal(new URL(url).hostname, '127.0.0.1', `only loopback is ever called, not ${url}`);
    return post(url, body, timeoutMs);
  };
};

test('alarm actions: a 301, 302, 307 or 308 fails at once, saying so, and its Location is never followed', async () => {
  const { app, done } = await testApp();
  const hits: string[] = [];
  const target = createServer((request, response) => {
    hits.push(`target ${request.url}`);
    response.writeHead(204).end();
  });
  let targetPort = 0;
  const redirector = createServer((request, response) => {
    request.resume();
    hits.push(`redirector ${request.url}`);
    response.writeHead(Number(request.url!.slice(1)), { location: `http://127.0.0.1:${targetPort}/moved` }).end();
  });
  try {
    await app.services.alarmEvaluator.stop(); // only this deliverer sends
    targetPort = await listen(target);
    const port = await listen(redirector);
    const statuses = [301, 302, 307, 308];
    const urls = statuses.map((status) => `http://127.0.0.1:${port}/${status}`);
    const store = app.services.store;
    await store.write(async ({ trx, now }) => enqueueDeliveries(trx, now, 'alarm-1', urls, '{}'));
    const sent: string[] = [];
    const deliverer = new AlarmActionDeliverer(store, { backoffMs: 1, maxBackoffMs: 1 }, loopbackOnly(sent));
    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 10)), 0);
    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 5000)), 0);
    assert.deepEqual(hits.sort(), statuses.map((status) => `redirector /${status}`).sort(), 'each tried once, the target never');
    const rows = await store.reader.selectFrom('alarm_deliveries').selectAll().orderBy('id').execute();
    assert.deepEqual(
      rows.map((row) => [row.status, row.attempts, row.last_error]),
      urls.map((url) => [
        'failed',
        1,
        `HTTP ${url.slice(-3)} from ${url}: not retried, a redirect is final (hearth-server never follows one)`,
      ]),
    );
  } finally {
    redirector.close();
    target.close();
    await done();
  }
});

test('alarm actions: a stored URL the outbound rule refuses fails at its first attempt with the rule, never sent; show counts it failed', async () => {
  const { app, done } = await testApp();
  try {
    await app.services.alarmEvaluator.stop();
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/alarms',
      headers: ADMIN,
      payload: {
        name: 'hot',
        metric_name: 'cpu',
        statistic: 'Average',
        period: 60,
        threshold: 90,
        comparison_operator: 'GreaterThanThreshold',
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const alarmId = created.json<{ alarm: { id: string } }>().alarm.id;
    // As a row an older hearth stored (before its rule knew this spelling). Never connected to: the rule refuses it first,
    // and the poster fails the test for anything but loopback.
    const stale = 'http://[::ffff:a9fe:a9fe]/latest/meta-data/';
    const store = app.services.store;
    await store.write(async ({ trx, now }) => enqueueDeliveries(trx, now, alarmId, [stale, stale], '{}'));
    const sent: string[] = [];
    const deliverer = new AlarmActionDeliverer(store, { backoffMs: 1, maxBackoffMs: 1 }, loopbackOnly(sent));
    await deliverer.deliverDue(new Date(Date.now() + 10));
    await deliverer.deliverDue(new Date(Date.now() + 5000));
    assert.deepEqual(sent, []);
    const rows = await store.reader.selectFrom('alarm_deliveries').select(['status', 'attempts']).execute();
    assert.deepEqual(rows, [
      { status: 'failed', attempts: 1 },
      { status: 'failed', attempts: 1 },
    ]);
    const shown = (await app.inject({ url: '/v1/default/alarms/hot', headers: ADMIN })).json<{
      alarm: { deliveries: { pending: number; failed: number; last_error: string } };
    }>().alarm.deliveries;
    assert.equal(shown.pending, 0);
    assert.equal(shown.failed, 2);
    assert.match(shown.last_error, /^not sent: action URL .* is link-local or a cloud metadata service.*; not retried$/);
  } finally {
    await done();
  }
});
