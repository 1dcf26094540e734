// Members hearth made (member_bootstrap) whose delivery failed for good were left in the group, counted
// in its capacity, with live credentials nobody was ever handed: the next delivery carried only newer
// members, the actuator could not be changed, and a scale-down asked the actuator to remove its oldest
// (real) members instead. Real HTTP on 127.0.0.1 to a receiver whose answer the test sets.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ACTUATOR_HEADERS, type ActuatorWebhook, type ScalingGroup } from '@hearth/protocol';
import { ADMIN, testApp } from '../test-support.ts';
import { verifyActuatorSignature } from './scaling-webhook.ts';

const GROUP = '/v1/default/stacks/web/scaling_groups/g';
const SECRET = 'first-secret-0123456789';

/** A receiver that answers `status.code` (302 with a Location elsewhere), recording every body and whether its signature held with `secret.value`. */
async function receiver(): Promise<{
  url: string;
  hooks: Array<{ hook: ActuatorWebhook; status: number; signed: boolean }>;
  status: { code: number };
  secret: { value: string };
  server: Server;
}> {
  const hooks: Array<{ hook: ActuatorWebhook; status: number; signed: boolean }> = [];
  const status = { code: 302 };
  const secret = { value: SECRET };
  const server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    request.on('end', () => {
      const signed = verifyActuatorSignature(
        secret.value,
        {
          signature: request.headers[ACTUATOR_HEADERS.signature] as string | undefined,
          timestamp: request.headers[ACTUATOR_HEADERS.timestamp] as string | undefined,
        },
        raw,
      );
      hooks.push({ hook: JSON.parse(raw) as ActuatorWebhook, status: status.code, signed });
      response.writeHead(status.code, status.code === 302 ? { location: 'http://127.0.0.1:9/elsewhere' } : {}).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hooks, status, secret, server };
}

async function createGroup(app: FastifyInstance, url: string, desired: number): Promise<void> {
  await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  const group = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/web/scaling_groups',
    headers: ADMIN,
    payload: { name: 'g', min_size: 1, max_size: 9, desired_capacity: desired, actuator: { url, secret: SECRET }, member_bootstrap: {} },
  });
  assert.equal(group.statusCode, 201, group.body);
}

async function patch(app: FastifyInstance, payload: Record<string, unknown>): Promise<ScalingGroup> {
  const reply = await app.inject({ method: 'PATCH', url: GROUP, headers: ADMIN, payload });
  assert.equal(reply.statusCode, 200, reply.body);
  return reply.json<{ scaling_group: ScalingGroup }>().scaling_group;
}

const show = async (app: FastifyInstance) =>
  (await app.inject({ url: GROUP, headers: ADMIN })).json<{ scaling_group: ScalingGroup }>().scaling_group;

/** Waits (at most 10 s) until no delivery is pending and `count` POSTs arrived. */
async function settled(app: FastifyInstance, hooks: unknown[], count: number): Promise<void> {
  const pending = () => app.services.store.reader.selectFrom('actuator_deliveries').select('id').where('status', '=', 'pending').execute();
  for (let i = 0; i < 500 && (hooks.length < count || (await pending()).length > 0); i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(hooks.length, count, 'POSTs received');
  assert.deepEqual(await pending(), []);
}

/** The agent credential of a member, as the webhook carries it: does hearth take it? */
async function credentialWorks(app: FastifyInstance, serverId: string): Promise<boolean> {
  const row = await app.services.store.reader.selectFrom('servers').select('access_key_id').where('id', '=', serverId).executeTakeFirst();
  if (!row) return false;
  const token = `${row.access_key_id}:${app.services.secrets.agentSecret(row.access_key_id)}`;
  const reply = await app.inject({ url: '/v1/guest/metadata', headers: { authorization: `Bearer ${token}` } });
  return reply.statusCode === 200;
}

const events = async (app: FastifyInstance, type: string) =>
  (await app.services.store.reader.selectFrom('events').select('message').where('type', '=', type).orderBy('id').execute()).map(
    (e) => e.message,
  );

test('members whose delivery failed for good ride, with their credentials, in the next delivery that succeeds', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    await createGroup(app, actuator.url, 1);
    await patch(app, { desired_capacity: 3 });
    await settled(app, actuator.hooks, 2);
    // Change 2 carries change 1's member too (its delivery had failed for good), before its own two.
    const stranded = actuator.hooks[1]!.hook.new_members.map((m) => m.server_id);
    assert.equal(stranded[0], actuator.hooks[0]!.hook.new_members[0]!.server_id);
    assert.equal(stranded.length, 3);
    let group = await show(app);
    assert.equal(group.deliveries.undelivered_members, 3);
    assert.equal(group.deliveries.failed, 2);
    const failed = await events(app, 'scaling_group.delivery_failed');
    assert.match(
      failed[1] ?? '',
      /^Change 2 not delivered \(not retried\): HTTP 302 .*; the 3 new member\(s\) it carried stay undelivered/,
    );

    actuator.status.code = 200;
    await patch(app, { desired_capacity: 4 });
    await settled(app, actuator.hooks, 3);
    const last = actuator.hooks[2]!.hook;
    assert.equal(last.sequence, 3);
    assert.equal(last.new_members.length, 4, 'the three undelivered members, then the new one');
    // Oldest change first (the two of change 2 by server id).
    const carried = last.new_members.slice(0, 3).map((m) => m.server_id);
    assert.deepEqual(carried, [stranded[0], ...stranded.slice(1).sort()]);
    for (const member of last.new_members) {
      assert.ok(member.credential, `credential of ${member.server_id}`);
      assert.equal(member.credential.secret_access_key, app.services.secrets.agentSecret(member.credential.access_key_id));
    }
    group = await show(app);
    assert.equal(group.deliveries.undelivered_members, 0);
    assert.match((await events(app, 'scaling_group.delivered')).at(-1) ?? '', /with 3 member\(s\) of earlier changes/);

    // Delivered now: the next change carries only its own.
    await patch(app, { desired_capacity: 5 });
    await settled(app, actuator.hooks, 4);
    assert.equal(actuator.hooks[3]!.hook.new_members.length, 1);
  } finally {
    await done();
    actuator.server.close();
  }
});

test('changing the actuator (URL, secret) sends the undelivered members at once, at the same capacity, to the new URL', async () => {
  const { app, done } = await testApp();
  const broken = await receiver();
  const fixed = await receiver();
  fixed.status.code = 200;
  fixed.secret.value = 'second-secret-0123456789';
  try {
    await createGroup(app, broken.url, 2);
    await settled(app, broken.hooks, 1);
    assert.equal((await show(app)).deliveries.undelivered_members, 2);

    const refused = await app.inject({
      method: 'PATCH',
      url: GROUP,
      headers: ADMIN,
      payload: { actuator: { url: 'http://169.254.169.254/x' } },
    });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(refused.json<{ error: { code: string } }>().error.code, 'ERR_SCALING_GROUP_INVALID');
    assert.equal((await show(app)).actuator.url, broken.url, 'a refused URL changes nothing');

    const updated = await patch(app, { actuator: { url: fixed.url, secret: fixed.secret.value } });
    assert.equal(updated.actuator.url, fixed.url);
    await settled(app, fixed.hooks, 1);
    const { hook, signed } = fixed.hooks[0]!;
    assert.ok(signed, 'signed with the new secret');
    assert.deepEqual(
      { sequence: hook.sequence, previous: hook.previous_capacity, desired: hook.desired_capacity, removals: hook.remove_candidates },
      { sequence: 2, previous: 2, desired: 2, removals: [] },
    );
    assert.deepEqual(hook.new_members.map((m) => m.server_id).sort(), [...hook.members].sort());
    assert.ok(hook.new_members.every((m) => m.credential !== null));
    const group = await show(app);
    assert.equal(group.deliveries.undelivered_members, 0);
    assert.equal(group.desired_capacity, 2);
    const changed = await events(app, 'scaling_group.actuator_changed');
    assert.deepEqual(changed, [`Actuator of g changed: URL ${fixed.url}, a new secret`]);
    const all = await app.services.store.reader.selectFrom('events').select(['message', 'data']).execute();
    assert.ok(!JSON.stringify(all).includes(fixed.secret.value), 'the secret is in no event');

    // Nothing undelivered, nothing pending: a new actuator queues nothing.
    await patch(app, { actuator: { url: broken.url } });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(fixed.hooks.length + broken.hooks.length, 2);
  } finally {
    await done();
    broken.server.close();
    fixed.server.close();
  }
});

test('a scale-down removes the members no delivery carried first, and revokes their credentials', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  actuator.status.code = 200;
  try {
    await createGroup(app, actuator.url, 1);
    await settled(app, actuator.hooks, 1);
    const [delivered] = actuator.hooks[0]!.hook.new_members.map((m) => m.server_id);
    actuator.status.code = 302;
    await patch(app, { desired_capacity: 3 });
    await settled(app, actuator.hooks, 2);
    const stranded = actuator.hooks[1]!.hook.new_members.map((m) => m.server_id);
    for (const id of [delivered!, ...stranded]) assert.ok(await credentialWorks(app, id), `${id} works before`);

    actuator.status.code = 200;
    const group = await patch(app, { desired_capacity: 1 });
    await settled(app, actuator.hooks, 3);
    const hook = actuator.hooks[2]!.hook;
    assert.deepEqual(
      { members: hook.members, removals: hook.remove_candidates, new_members: hook.new_members },
      { members: [delivered], removals: [], new_members: [] },
      'the member the actuator knows is kept, and not offered for removal',
    );
    assert.deepEqual(
      group.members.map((m) => m.server_id),
      [delivered],
    );
    assert.equal(group.deliveries.undelivered_members, 0);
    for (const id of stranded) assert.equal(await credentialWorks(app, id), false, `${id} revoked`);
    assert.ok(await credentialWorks(app, delivered!));
    assert.equal(
      (await app.services.store.reader.selectFrom('servers').select('id').where('id', 'in', stranded).execute()).length,
      0,
      'their records are deleted',
    );
    const [removed] = await events(app, 'scaling_group.undelivered_removed');
    assert.match(removed ?? '', /^group updated: 2 member\(s\) no delivery ever carried removed first/);
    assert.deepEqual(await events(app, 'scaling_group.recovered'), [
      '2 never delivered member record(s) a scale-down of g removed deleted (credentials revoked)',
    ]);
  } finally {
    await done();
    actuator.server.close();
  }
});
