import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostsLookup, testApp } from '../test-support.ts';
import { actionUrlProblem, AlarmActionDeliverer, enqueueDeliveries, gotActionPoster } from './alarm-actions.ts';

test('action URLs: http(s) only, never link-local', () => {
  assert.equal(actionUrlProblem('http://127.0.0.1:8000/v1/signal/x?Signature=y'), null);
  assert.equal(actionUrlProblem('https://hooks.example.com/alarm'), null);
  assert.match(actionUrlProblem('http://169.254.169.254/latest/meta-data/') ?? '', /link-local/);
  assert.match(actionUrlProblem('http://[fe80::a:1]/') ?? '', /link-local/);
  assert.match(actionUrlProblem('file:///etc/passwd') ?? '', /must be http or https, not file:/);
  assert.match(actionUrlProblem('not a url') ?? '', /is not a URL/);
});

test('action URLs: the metadata service by name is refused as its address is, trailing dot or not', () => {
  for (const url of ['http://metadata.google.internal/computeMetadata/v1/', 'http://Metadata.Google.Internal./computeMetadata/v1/'])
    assert.match(actionUrlProblem(url) ?? '', /its host metadata\.google\.internal is link-local or a cloud metadata service/, url);
});

test('deliveries: a name that resolves to a metadata address is not sent to; a loopback name is', async () => {
  const { app, done } = await testApp();
  const received: string[] = [];
  const receiver = createServer((request, response) => {
    received.push(`${request.headers.host} ${request.url}`);
    response.writeHead(204).end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  try {
    await app.services.alarmEvaluator.stop(); // only this deliverer sends
    const port = (receiver.address() as AddressInfo).port;
    const lookup = hostsLookup(); // nothing sent to DNS; see hostsLookup
    const deliverer = new AlarmActionDeliverer(app.services.store, { backoffMs: 1, maxBackoffMs: 1 }, gotActionPoster(lookup));
    const store = app.services.store;
    await store.write(async ({ trx, now }) =>
      enqueueDeliveries(trx, now, 'alarm-1', [`http://rebound.test:${port}/steal`, `http://hook.test:${port}/scale`], '{}'),
    );
    assert.equal(await deliverer.deliverDue(new Date(Date.now() + 10)), 1);
    assert.deepEqual(received, [`hook.test:${port} /scale`], 'only the loopback name was called');
    const refused = await store.reader
      .selectFrom('alarm_deliveries')
      .selectAll()
      .where('url', 'like', 'http://rebound.test%')
      .executeTakeFirstOrThrow();
    assert.equal(refused.status, 'pending');
    assert.match(
      refused.last_error ?? '',
      /not sent: rebound\.test \(resolves to 169\.254\.169\.254\) is link-local or a cloud metadata service/,
    );
  } finally {
    receiver.close();
    await done();
  }
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
