// An upgrade to 0011: members left by deliveries that failed for good before it (and those of a
// delivery still pending) are marked undelivered from the stored payloads, and the next delivery
// that succeeds carries them. The store is made by a real app, then set back to what a hearth before
// 0011 left (the column dropped, its migration record deleted). Real HTTP on 127.0.0.1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { ActuatorWebhook, ScalingGroup } from '@hearth/protocol';
import { ADMIN, appOn, testStore } from '../../test-support.ts';

const GROUP = '/v1/default/stacks/web/scaling_groups/g';

test('0011 marks the members of failed and pending deliveries undelivered; the next delivery that succeeds carries them', async (t) => {
  const storage = await testStore('hearth-migrate-0011-');
  t.after(() => storage.remove());
  const hooks: ActuatorWebhook[] = [];
  const status = { code: 200 };
  const receiver = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    request.on('end', () => {
      hooks.push(JSON.parse(raw) as ActuatorWebhook);
      response.writeHead(status.code, status.code === 302 ? { location: 'http://127.0.0.1:9/' } : {}).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  t.after(() => receiver.close());
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const open = () => appOn(storage);
  const until = async (done: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 500 && !(await done()); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(await done(), 'in time');
  };
  const patch = async (app: FastifyInstance, desired: number) =>
    assert.equal(
      (await app.inject({ method: 'PATCH', url: GROUP, headers: ADMIN, payload: { desired_capacity: desired } })).statusCode,
      200,
    );
  const deliveries = (app: FastifyInstance) =>
    app.services.store.reader.selectFrom('actuator_deliveries').select(['sequence', 'status']).orderBy('sequence').execute();

  let app = await open();
  try {
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_groups',
      headers: ADMIN,
      payload: { name: 'g', min_size: 1, max_size: 9, actuator: { url }, member_bootstrap: {} },
    });
    assert.equal(created.statusCode, 201, created.body);
    await until(() => hooks.length === 1);
    status.code = 302; // change 2 fails for good
    await patch(app, 3);
    await until(() => hooks.length === 2);
    status.code = 503; // change 3 stays pending
    await patch(app, 4);
    await until(() => hooks.length >= 3);
    assert.deepEqual(await deliveries(app), [
      { sequence: 1, status: 'delivered' },
      { sequence: 2, status: 'failed' },
      { sequence: 3, status: 'pending' },
    ]);
  } finally {
    await app.close();
  }
  // As a hearth before 0011 left it.
  app = await open();
  try {
    await app.services.actuatorDeliverer.stop(); // none reads the column while it goes
    await app.services.store.write(async ({ trx }) => {
      await sql`alter table scaling_members drop column undelivered_sequence`.execute(trx);
      await sql`delete from kysely_migration where name >= ${'0011_scaling_undelivered_members'}`.execute(trx);
    });
  } finally {
    await app.close();
  }

  // The members each change added (change 3's attempt carried change 2's before its own).
  const ids = (n: number) =>
    hooks[n]!.new_members.map((m) => m.server_id).filter(
      (id) => !hooks.slice(0, n).some((h) => h.new_members.some((m) => m.server_id === id)),
    );
  app = await open();
  try {
    const marks = await app.services.store.reader.selectFrom('scaling_members').select(['server_id', 'undelivered_sequence']).execute();
    const mark = (id: string) => marks.find((m) => m.server_id === id)?.undelivered_sequence;
    assert.deepEqual(
      [...ids(0), ...ids(1), ...ids(2)].map(mark),
      [null, 2, 2, 3],
      'delivered: none; failed for good: its sequence; pending: its own',
    );
    const shown = (await app.inject({ url: GROUP, headers: ADMIN })).json<{ scaling_group: ScalingGroup }>().scaling_group;
    assert.equal(shown.deliveries.undelivered_members, 3);

    status.code = 200;
    // Its retries went on across the restarts (and one may answer 503 still): its backoff is not what is tested.
    const dueNow = () =>
      app.services.store.write(({ trx, now }) =>
        trx.updateTable('actuator_deliveries').set({ next_attempt_at: now }).where('status', '=', 'pending').execute(),
      );
    await until(async () => (await dueNow(), (await deliveries(app)).every((d) => d.status !== 'pending')));
    const last = hooks.at(-1)!;
    assert.equal(last.sequence, 3);
    assert.deepEqual(
      last.new_members.map((m) => m.server_id),
      [...ids(1).sort(), ...ids(2)],
    );
    assert.ok(last.new_members.every((m) => m.credential !== null));
    const after = (await app.inject({ url: GROUP, headers: ADMIN })).json<{ scaling_group: ScalingGroup }>().scaling_group;
    assert.equal(after.deliveries.undelivered_members, 0);
  } finally {
    await app.close();
  }
});
