import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testApp } from '../test-support.ts';
import { actionUrlProblem, AlarmActionDeliverer, enqueueDeliveries } from './alarm-actions.ts';

test('action URLs: http(s) only, never link-local', () => {
  assert.equal(actionUrlProblem('http://127.0.0.1:8000/v1/signal/x?Signature=y'), null);
  assert.equal(actionUrlProblem('https://hooks.example.com/alarm'), null);
  assert.match(actionUrlProblem('http://169.254.169.254/latest/meta-data/') ?? '', /link-local/);
  assert.match(actionUrlProblem('http://[fe80::a:1]/') ?? '', /link-local/);
  assert.match(actionUrlProblem('file:///etc/passwd') ?? '', /scheme file: is not http or https/);
  assert.equal(actionUrlProblem('not a url'), 'not a URL');
});

test('action URLs: link-local in IPv4-mapped IPv6 or numeric spellings is refused too', () => {
  for (const url of [
    'http://[::ffff:169.254.169.254]/latest/meta-data/',
    'http://[::ffff:a9fe:1]/',
    'http://2852039166/',
    'http://[febf::1]/',
  ])
    assert.match(actionUrlProblem(url) ?? '', /link-local/, url);
  assert.equal(actionUrlProblem('http://[::ffff:127.0.0.1]:8000/v1/signal/x'), null);
  assert.equal(actionUrlProblem('http://[fec0::1]/'), null);
});

test('deliveries: in order per URL, retried after a failure, given up after a day, bounded by a stop time', async () => {
  const { app, done } = await testApp();
  try {
    const store = app.services.store;
    const sent: string[] = [];
    const down = new Set<string>(['http://127.0.0.1:9/b']);
    const deliverer = new AlarmActionDeliverer(store, { backoffMs: 1, maxBackoffMs: 1 }, async (url, body) => {
      if (down.has(url)) throw new Error('connect ECONNREFUSED');
      sent.push(`${url} ${body}`);
      return 204;
    });
    await store.write(async ({ trx, now }) => {
      await enqueueDeliveries(trx, now, 'alarm-1', ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b'], '1');
      await enqueueDeliveries(trx, now, 'alarm-1', ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b'], '2');
    });
    assert.equal(await deliverer.deliverDue(new Date(), 0), 0, 'past its stop time it sends nothing');
    assert.deepEqual(sent, []);

    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 10)), 2);
    assert.deepEqual(sent, ['http://127.0.0.1:9/a 1', 'http://127.0.0.1:9/a 2'], '/b is down: its second delivery waits behind its first');
    down.clear();
    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 10)), 2);
    assert.deepEqual(sent.slice(2), ['http://127.0.0.1:9/b 1', 'http://127.0.0.1:9/b 2']);

    const rows = await store.reader.selectFrom('alarm_deliveries').select(['status', 'attempts']).orderBy('id').execute();
    assert.deepEqual(
      rows.map((r) => `${r.status}/${r.attempts}`),
      ['delivered/1', 'delivered/2', 'delivered/1', 'delivered/1'],
    );

    down.add('http://127.0.0.1:9/c');
    await store.write(async ({ trx, now }) => enqueueDeliveries(trx, now, 'alarm-2', ['http://127.0.0.1:9/c'], '3'));
    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 86_400_000 + 1000)), 0);
    const failed = await store.reader
      .selectFrom('alarm_deliveries')
      .selectAll()
      .where('alarm_id', '=', 'alarm-2')
      .executeTakeFirstOrThrow();
    assert.equal(failed.status, 'failed');
    assert.match(failed.last_error ?? '', /ECONNREFUSED \(http:\/\/127\.0\.0\.1:9\/c\)/);
  } finally {
    await done();
  }
});
