// A member_bootstrap scale-up makes its members' server records and then writes the capacity. A real
// hearth-server killed (SIGKILL) between the two left the records as servers outside the group for
// good; now they are reserved when the change takes the lease, and the next change of the group
// deletes what the dead one left. Also, on a store: what recoverLeftovers deletes and what it leaves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScalingGroup, Server } from '@hearth/protocol';
import { freePort, removeServerData, spawnServer, type ServerProcess } from '../../../../test/helpers/server.ts';
import { ADMIN, testApp } from '../test-support.ts';
import { MEMBER_JOINING } from './scaling-bootstrap.ts';
import { ScalingAdjuster } from './scaling-adjust.ts';

const GROUP = '/v1/default/stacks/web/scaling_groups/g';

async function call<T>(server: ServerProcess, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'x-auth-token': server.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

const servers = async (server: ServerProcess) =>
  (await call<{ servers: Server[] }>(server, 'GET', '/v1/default/servers?limit=1000')).servers.map((s) => s.id).sort();
const group = async (server: ServerProcess) => (await call<{ scaling_group: ScalingGroup }>(server, 'GET', GROUP)).scaling_group;

test('hearth-server killed while a scale-up makes its members: the next change of the group deletes the records left outside it', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bootstrap-crash-'));
  let server: ServerProcess | undefined;
  try {
    server = await spawnServer(dataDir, await freePort());
    await call(server, 'POST', '/v1/default/stacks', { stack_name: 'web' });
    // The actuator is a closed loopback port: its deliveries are retried, nothing is sent anywhere else.
    await call(server, 'POST', '/v1/default/stacks/web/scaling_groups', {
      name: 'g',
      min_size: 0,
      max_size: 400,
      actuator: { url: 'http://127.0.0.1:9/' },
      member_bootstrap: {},
    });
    // 400 records, one transaction each: the kill lands while they are being made, before the capacity write.
    const scaleUp = fetch(`${server.url}${GROUP}`, {
      method: 'PATCH',
      headers: { 'x-auth-token': server.token, 'content-type': 'application/json' },
      body: JSON.stringify({ desired_capacity: 400 }),
    }).catch(() => undefined);
    for (let polls = 0; polls < 1000 && (await servers(server)).length === 0; polls++) await new Promise((r) => setTimeout(r, 5));
    server.child.kill('SIGKILL');
    await server.exited;
    await scaleUp;

    server = await spawnServer(dataDir, await freePort());
    const left = await servers(server);
    const before = await group(server);
    assert.ok(
      left.length > 0 && before.desired_capacity === 0,
      `the kill landed in the window: ${left.length} records, capacity ${before.desired_capacity}`,
    );
    assert.equal(before.current_size, 0, 'the records are no members');

    const after = (await call<{ scaling_group: ScalingGroup }>(server, 'PATCH', GROUP, { desired_capacity: 1 })).scaling_group;
    assert.equal(after.desired_capacity, 1);
    assert.equal(after.current_size, 1);
    assert.deepEqual(
      await servers(server),
      after.members.map((m) => m.server_id),
      'no server record left outside the group',
    );
  } finally {
    server?.child.kill('SIGKILL');
    await server?.exited;
    await removeServerData(dataDir);
  }
});

test('recoverLeftovers: joining rows of a group whose lease is free or lapsed lose their records; a held lease, members and other servers are kept', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    for (const name of ['free', 'held']) {
      const created = await app.inject({
        method: 'POST',
        url: '/v1/default/stacks/web/scaling_groups',
        headers: ADMIN,
        payload: { name, min_size: 0, max_size: 5, actuator: { url: 'http://127.0.0.1:9/' }, member_bootstrap: {} },
      });
      assert.equal(created.statusCode, 201, created.body);
    }
    const register = async (name: string) => {
      const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name, stack: 'web' } });
      assert.equal(reply.statusCode, 201, reply.body);
      return reply.json<{ server: { id: string } }>().server.id;
    };
    const [leftover, member, bystander, busy] = [
      await register('leftover'),
      await register('member'),
      await register('bystander'),
      await register('busy'),
    ];
    const store = app.services.store;
    const groups = await store.reader.selectFrom('scaling_groups').select(['id', 'name']).execute();
    const id = (name: string) => groups.find((g) => g.name === name)!.id;
    const now = new Date().toISOString();
    // As a crash leaves them: joining rows (one whose record was never made), a lapsed lease; and a change still running on `held`.
    await store.write(async ({ trx }) => {
      const row = (group: string, server: string, bootstrap: number) => ({
        group_id: id(group),
        server_id: server,
        bootstrap,
        added_at: now,
      });
      await trx
        .insertInto('scaling_members')
        .values([
          row('free', leftover, MEMBER_JOINING),
          row('free', 'never-made', MEMBER_JOINING),
          row('free', member, 1),
          row('held', busy, MEMBER_JOINING),
        ])
        .execute();
      await trx
        .updateTable('scaling_groups')
        .set({ scaling_lease_id: 'dead', scaling_lease_until: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', id('free'))
        .execute();
      await trx
        .updateTable('scaling_groups')
        .set({ scaling_lease_id: 'live', scaling_lease_until: new Date(Date.now() + 60_000).toISOString() })
        .where('id', '=', id('held'))
        .execute();
    });

    const adjuster = new ScalingAdjuster(store, app.services.servers, (error) => assert.fail(String(error)));
    assert.equal(await adjuster.recoverLeftovers(), 1);
    const left = (await store.reader.selectFrom('servers').select('id').execute()).map((s) => s.id).sort();
    assert.deepEqual(left, [member, bystander, busy].sort());
    const rows = await store.reader.selectFrom('scaling_members').select(['server_id', 'bootstrap']).orderBy('server_id').execute();
    assert.deepEqual(
      rows,
      [
        { server_id: member, bootstrap: 1 },
        { server_id: busy, bootstrap: MEMBER_JOINING },
      ].sort((a, b) => (a.server_id < b.server_id ? -1 : 1)),
    );
    const leases = await store.reader.selectFrom('scaling_groups').select(['name', 'scaling_lease_id']).orderBy('name').execute();
    assert.deepEqual(leases, [
      { name: 'free', scaling_lease_id: null },
      { name: 'held', scaling_lease_id: 'live' },
    ]);
    const events = await store.reader.selectFrom('events').select('message').where('type', '=', 'scaling_group.recovered').execute();
    assert.deepEqual(
      events.map((e) => e.message),
      ['2 member record(s) a change of free left unfinished deleted'],
    );
    assert.equal(await adjuster.recoverLeftovers(), 0, 'nothing left the second time');
  } finally {
    await done();
  }
});
