// An actuator that answers a redirect, and a stored actuator URL the outbound-URL rule refuses, fail
// the delivery at its first attempt with the reason in the group's show and event: they were retried
// for ever, holding every later change behind them. A redirect is never followed. Real HTTP on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ScalingGroup } from '@hearth/protocol';
import { ADMIN, testApp } from '../test-support.ts';
import { ActuatorDeliverer } from './scaling-deliverer.ts';

const GROUP = '/v1/default/stacks/web/scaling_groups/g';

async function createGroup(app: FastifyInstance, url: string): Promise<void> {
  await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  const group = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/web/scaling_groups',
    headers: ADMIN,
    payload: { name: 'g', min_size: 1, max_size: 5, actuator: { url } },
  });
  assert.equal(group.statusCode, 201, group.body);
}

const show = async (app: FastifyInstance) =>
  (await app.inject({ url: GROUP, headers: ADMIN })).json<{ scaling_group: ScalingGroup }>().scaling_group;
const rows = (app: FastifyInstance) =>
  app.services.store.reader.selectFrom('actuator_deliveries').select(['sequence', 'status', 'attempts']).orderBy('sequence').execute();

/** Runs deliverer rounds until `done` holds (at most 5 s). */
async function roundsUntil(deliverer: ActuatorDeliverer, done: () => Promise<boolean>): Promise<void> {
  for (let round = 0; round < 250 && !(await done()); round++) {
    await deliverer.deliverDue();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('an actuator answering 302 fails the delivery at once, saying so; the Location is never followed and the next change goes out', async () => {
  const { app, done } = await testApp();
  const { services } = app;
  await services.actuatorDeliverer.stop(); // only the deliverer below sends
  const hits: string[] = [];
  const target = createServer((request, response) => {
    hits.push(`target ${request.url}`);
    request.resume();
    response.writeHead(200).end();
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const targetPort = (target.address() as AddressInfo).port;
  const redirector = createServer((request, response) => {
    hits.push(`redirector ${request.url}`);
    request.resume();
    response.writeHead(302, { location: `http://127.0.0.1:${targetPort}/moved` }).end();
  });
  await new Promise<void>((resolve) => redirector.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/hook`;
  const transport = { publicUrl: services.publicUrl, secrets: services.secrets };
  const deliverer = new ActuatorDeliverer(services.store, services.feed, transport, (error) => assert.fail(String(error)));
  try {
    await createGroup(app, url);
    const patched = await app.inject({ method: 'PATCH', url: GROUP, headers: ADMIN, payload: { desired_capacity: 2 } });
    assert.equal(patched.statusCode, 200, patched.body);
    await roundsUntil(deliverer, async () => (await rows(app)).every((row) => row.status !== 'pending'));
    assert.deepEqual(await rows(app), [
      { sequence: 1, status: 'failed', attempts: 1 },
      { sequence: 2, status: 'failed', attempts: 1 },
    ]);
    assert.deepEqual(hits, ['redirector /hook', 'redirector /hook'], 'each change POSTed once, the target never');
    const group = await show(app);
    assert.deepEqual(
      { ...group.deliveries, next_attempt: null },
      {
        pending: 0,
        failed: 2,
        delivered: 0,
        undelivered_members: 0,
        last_error: `HTTP 302 from ${url}: a redirect, which hearth-server never follows; not retried`,
        next_attempt: null,
      },
    );
    const events = await services.store.reader
      .selectFrom('events')
      .select('message')
      .where('type', '=', 'scaling_group.delivery_failed')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => e.message),
      [1, 2].map((n) => `Change ${n} not delivered (not retried): HTTP 302 from ${url}: a redirect, which hearth-server never follows`),
    );
  } finally {
    await deliverer.stop();
    await done();
    redirector.close();
    target.close();
  }
});

test('a stored actuator URL the outbound rule refuses fails at its first attempt, never sent, with the rule as the reason', async () => {
  const { app, done } = await testApp();
  const { services } = app;
  await services.actuatorDeliverer.stop();
  const transport = { publicUrl: services.publicUrl, secrets: services.secrets };
  const deliverer = new ActuatorDeliverer(services.store, services.feed, transport, (error) => assert.fail(String(error)));
  try {
    await createGroup(app, 'http://127.0.0.1:9/');
    // As a row stored without the create-time check. IPv6 link-local without a zone: no socket could connect to it.
    await services.store.write(({ trx }) => trx.updateTable('scaling_groups').set({ actuator_url: 'http://[fe80::1]:9/x' }).execute());
    await roundsUntil(deliverer, async () => (await rows(app)).every((row) => row.status !== 'pending'));
    assert.deepEqual(await rows(app), [{ sequence: 1, status: 'failed', attempts: 1 }]);
    const group = await show(app);
    assert.equal(group.deliveries.failed, 1);
    assert.equal(group.deliveries.pending, 0);
    assert.match(group.deliveries.last_error ?? '', /^not sent: actuator\.url http:\/\/\[fe80::1\]:9\/x: .*link-local.*; not retried$/);
  } finally {
    await deliverer.stop();
    await done();
  }
});
