// An alarm action aimed at a revoked or deleted scaling policy's URL answers 403 or 404 for ever:
// such a refusal ends the delivery at its first attempt. What may pass (a network error, a 5xx,
// 408, 429) is retried. Real HTTP on 127.0.0.1, the deliverer's own poster.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ADMIN, testApp } from '../test-support.ts';
import { AlarmActionDeliverer, enqueueDeliveries, isFinalStatus } from './alarm-actions.ts';

const FINAL = [400, 403, 404, 410];
const RETRIED = [408, 429, 500, 503];

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

test('isFinalStatus: a 3xx and a 4xx but 408 and 429 are final; 5xx, 408, 429 are not', () => {
  for (const status of [...FINAL, 301, 302, 307, 308]) assert.equal(isFinalStatus(status), true, String(status));
  for (const status of [...RETRIED, 200]) assert.equal(isFinalStatus(status), false, String(status));
});

test('deliveries: a 400, 403, 404 or 410 fails at once with its status; 408, 429, 5xx and a refused connection are retried', async () => {
  const { app, done } = await testApp();
  const hits = new Map<string, number>();
  // Answers each path with the status it names: /403 -> 403.
  const receiver = createServer((request, response) => {
    request.resume();
    hits.set(request.url!, (hits.get(request.url!) ?? 0) + 1);
    response.writeHead(Number(request.url!.slice(1)), { 'content-type': 'application/json' }).end('{}');
  });
  const closed = createServer();
  try {
    await app.services.alarmEvaluator.stop(); // only this deliverer sends
    const port = await listen(receiver);
    // A port that was just free and is closed again: the connection is refused.
    const refusedPort = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const url = (status: number) => `http://127.0.0.1:${port}/${status}`;
    const refused = `http://127.0.0.1:${refusedPort}/down`;
    const store = app.services.store;
    await store.write(async ({ trx, now }) => {
      await enqueueDeliveries(trx, now, 'alarm-1', [...FINAL, ...RETRIED].map(url).concat(refused), '{"n":1}');
      // A second change to a refused URL is not held behind the first: it is tried, and ends, in the same run.
      await enqueueDeliveries(trx, now, 'alarm-1', [url(404)], '{"n":2}');
    });
    const deliverer = new AlarmActionDeliverer(store, { backoffMs: 1, maxBackoffMs: 1 });
    const rows = () => store.reader.selectFrom('alarm_deliveries').selectAll().orderBy('id').execute();

    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 10)), 0);
    for (const status of FINAL) assert.equal(hits.get(`/${status}`), status === 404 ? 2 : 1, `${status}: tried once per delivery`);
    let stored = await rows();
    for (const row of stored) {
      const status = Number(new URL(row.url).pathname.slice(1));
      assert.equal(row.attempts, 1, row.url);
      if (FINAL.includes(status)) {
        assert.equal(row.status, 'failed', row.url);
        assert.equal(row.last_error, `HTTP ${status} from ${row.url}: not retried, a client error other than 408 or 429 is final`);
      } else {
        assert.equal(row.status, 'pending', row.url);
        assert.match(row.last_error ?? '', status ? new RegExp(`^HTTP ${status} from `) : /ECONNREFUSED/, row.url);
      }
    }

    // The next runs send the retried ones again, never the final ones.
    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 1000)), 0);
    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 2000)), 0);
    for (const status of FINAL) assert.equal(hits.get(`/${status}`), status === 404 ? 2 : 1, `${status}: not sent again`);
    for (const status of RETRIED) assert.equal(hits.get(`/${status}`), 3, `${status}: sent again`);
    stored = await rows();
    assert.deepEqual(
      stored.map((r) => `${new URL(r.url).pathname} ${r.status}/${r.attempts}`),
      [...FINAL.map((s) => `/${s} failed/1`), ...RETRIED.map((s) => `/${s} pending/3`), '/down pending/3', '/404 failed/1'],
    );
  } finally {
    receiver.close();
    await done();
  }
});

test('alarm show: a delivery refused for good counts as failed, with its status and why', async () => {
  const { app, done } = await testApp();
  const receiver = createServer((request, response) => {
    request.resume();
    response.writeHead(403).end();
  });
  try {
    await app.services.alarmEvaluator.stop();
    const port = await listen(receiver);
    const action = `http://127.0.0.1:${port}/v1/signal/revoked`;
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
        alarm_actions: [action],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const alarmId = created.json<{ alarm: { id: string } }>().alarm.id;
    const store = app.services.store;
    await store.write(async ({ trx, now }) => enqueueDeliveries(trx, now, alarmId, [action], '{}'));
    await new AlarmActionDeliverer(store, { backoffMs: 1, maxBackoffMs: 1 }).deliverDue(new Date(Date.now() + 10));
    const shown = await app.inject({ url: '/v1/default/alarms/hot', headers: ADMIN });
    assert.deepEqual(shown.json<{ alarm: { deliveries: unknown } }>().alarm.deliveries, {
      pending: 0,
      failed: 1,
      delivered: 0,
      last_error: `HTTP 403 from ${action}: not retried, a client error other than 408 or 429 is final`,
    });
  } finally {
    receiver.close();
    await done();
  }
});
