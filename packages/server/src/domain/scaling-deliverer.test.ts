import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ActuatorWebhook } from '@hearth/protocol';
import { ADMIN, hostsLookup, testApp } from '../test-support.ts';
import { ActuatorDeliverer } from './scaling-deliverer.ts';

test('two deliverers on one database send each change once, in order; delivered rows are pruned by age', async () => {
  const { app, done } = await testApp();
  const seen: ActuatorWebhook[] = [];
  const receiver = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    // A slow receiver widens the window in which a second deliverer could pick the same row.
    request.on('end', () => setTimeout(() => (seen.push(JSON.parse(raw) as ActuatorWebhook), response.writeHead(200).end()), 30));
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const { services } = app;
  const transport = { publicUrl: services.publicUrl, secrets: services.secrets };
  const second = new ActuatorDeliverer(services.store, services.feed, transport, (error) => assert.fail(String(error)), {
    pollMs: 5,
    keepDeliveredMs: 0,
  });
  second.start();
  try {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    const group = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_groups',
      headers: ADMIN,
      payload: { name: 'g', min_size: 1, max_size: 20, actuator: { url } },
    });
    assert.equal(group.statusCode, 201, group.body);
    for (let size = 2; size <= 6; size++) {
      const update = await app.inject({
        method: 'PATCH',
        url: '/v1/default/stacks/web/scaling_groups/g',
        headers: ADMIN,
        payload: { desired_capacity: size },
      });
      assert.equal(update.statusCode, 200);
    }
    const end = Date.now() + 10_000;
    while (seen.length < 6 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 300)); // room for a duplicate to show up
    assert.deepEqual(
      seen.map((hook) => hook.sequence),
      [1, 2, 3, 4, 5, 6],
    );
    assert.equal(new Set(seen.map((hook) => hook.delivery_id)).size, 6);
    const delivered = () =>
      services.store.reader.selectFrom('actuator_deliveries').select('id').where('status', '=', 'delivered').execute();
    assert.equal((await delivered()).length, 6);
    await second.prune();
    assert.equal((await delivered()).length, 0);
  } finally {
    await second.stop();
    await done();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
});

test('a stored actuator URL on a link-local host (saved without the create-time check) is never called: the delivery fails, saying why', async () => {
  const { app, done } = await testApp();
  const { services } = app;
  await services.actuatorDeliverer.stop();
  const transport = { publicUrl: services.publicUrl, secrets: services.secrets };
  const deliverer = new ActuatorDeliverer(services.store, services.feed, transport, (error) => assert.fail(String(error)), { pollMs: 5 });
  try {
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    const group = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_groups',
      headers: ADMIN,
      payload: { name: 'g', min_size: 1, max_size: 2, actuator: { url: 'http://127.0.0.1:9/' } },
    });
    assert.equal(group.statusCode, 201, group.body);
    // As a row stored without the create-time check (an older hearth, a hand edit). An IPv6 link-local host, so that
    // even a broken check could never reach the cloud metadata address: without a zone, no socket connects to it.
    await services.store.write(({ trx }) => trx.updateTable('scaling_groups').set({ actuator_url: 'http://[fe80::1]:9/x' }).execute());
    deliverer.start();
    let lastError: string | null = null;
    for (let waited = 0; waited < 5000 && lastError === null; waited += 20) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      const row = await services.store.reader.selectFrom('actuator_deliveries').select('last_error').executeTakeFirst();
      lastError = row?.last_error ?? null;
    }
    assert.match(lastError ?? '', /not sent: .*link-local/);
  } finally {
    await deliverer.stop();
    await done();
  }
});

test('an actuator whose name resolves to a metadata address at send time is never called; a loopback name is', async () => {
  const { app, done } = await testApp();
  const { services } = app;
  await services.actuatorDeliverer.stop(); // only the deliverer below sends, through the hosts-style resolver
  const received: string[] = [];
  const receiver = createServer((request, response) => {
    received.push(`${request.headers.host} ${request.url}`);
    request.resume();
    request.on('end', () => response.writeHead(200).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const port = (receiver.address() as AddressInfo).port;
  const lookup = hostsLookup(); // nothing sent to DNS; see hostsLookup
  const transport = { publicUrl: services.publicUrl, secrets: services.secrets };
  const deliverer = new ActuatorDeliverer(services.store, services.feed, transport, (error) => assert.fail(String(error)), {
    pollMs: 5,
    lookup,
  });
  try {
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    for (const [name, host] of [
      ['rebound', 'rebound.test'],
      ['direct', 'hook.test'],
    ]) {
      const group = await app.inject({
        method: 'POST',
        url: '/v1/default/stacks/web/scaling_groups',
        headers: ADMIN,
        payload: { name, min_size: 1, max_size: 2, actuator: { url: `http://${host}:${port}/${name}` } },
      });
      assert.equal(group.statusCode, 201, group.body);
    }
    deliverer.start();
    const errorOf = async () =>
      (
        await services.store.reader
          .selectFrom('actuator_deliveries')
          .select('last_error')
          .where('last_error', 'is not', null)
          .executeTakeFirst()
      )?.last_error ?? null;
    for (let waited = 0; waited < 10_000 && (received.length === 0 || (await errorOf()) === null); waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(received, [`hook.test:${port} /direct`], 'only the loopback name was called');
    assert.match(
      (await errorOf()) ?? '',
      /not sent: rebound\.test \(resolves to 169\.254\.169\.254\) is link-local or a cloud metadata service/,
    );
  } finally {
    await deliverer.stop();
    await done();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
});
