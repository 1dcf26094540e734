// A member_bootstrap scale-up makes its members' server records and then writes the capacity. A real
// hearth-server killed (SIGKILL) between the two left the records as servers outside the group for
// good; now they are reserved when the change takes the lease, and the next change of the group
// deletes what the dead one left, and so does the restarted server by itself once the dead change's
// lease lapsed (ScalingRecovery). Also, on a store: what recoverLeftovers deletes and what it leaves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Event, ScalingGroup, Server } from '@hearth/protocol';
import { freePort, operatorCall, removeServerData, spawnServer, type ServerProcess } from '../../../../test/helpers/server.ts';
import { ADMIN, testApp } from '../test-support.ts';
import { MEMBER_JOINING } from './scaling-bootstrap.ts';
import { ScalingAdjuster } from './scaling-adjust.ts';
import { SCALING_LEASE_MS } from './scaling-change.ts';

const GROUP = '/v1/default/stacks/web/scaling_groups/g';

const servers = async (server: ServerProcess) =>
  (await operatorCall<{ servers: Server[] }>(server, 'GET', '/v1/default/servers?limit=1000')).servers.map((s) => s.id).sort();
const group = async (server: ServerProcess) => (await operatorCall<{ scaling_group: ScalingGroup }>(server, 'GET', GROUP)).scaling_group;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A real hearth-server on `dataDir`, killed (SIGKILL) while a 400-member scale-up makes its members' records,
 * then started again: the server, the records the kill left, and when the dead change took its lease.
 */
async function crashMidScaleUp(dataDir: string): Promise<{ server: ServerProcess; left: string[]; leaseTaken: number }> {
  const first = await spawnServer(dataDir, await freePort());
  try {
    await operatorCall(first, 'POST', '/v1/default/stacks', { stack_name: 'web' });
    // The actuator is a closed loopback port: its deliveries are retried, nothing is sent anywhere else.
    await operatorCall(first, 'POST', '/v1/default/stacks/web/scaling_groups', {
      name: 'g',
      min_size: 0,
      max_size: 400,
      actuator: { url: 'http://127.0.0.1:9/' },
      member_bootstrap: {},
    });
    const leaseTaken = Date.now();
    // 400 records, one transaction each: the kill lands while they are being made, before the capacity write.
    const scaleUp = operatorCall(first, 'PATCH', GROUP, { desired_capacity: 400 }).catch(() => undefined);
    for (let polls = 0; polls < 1000 && (await servers(first)).length === 0; polls++) await sleep(5);
    first.child.kill('SIGKILL');
    await first.exited;
    await scaleUp;
    const server = await spawnServer(dataDir, await freePort());
    return { server, left: await servers(server), leaseTaken };
  } finally {
    first.child.kill('SIGKILL');
  }
}

test('hearth-server killed while a scale-up makes its members: the next change of the group deletes the records left outside it', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-bootstrap-crash-'));
  let server: ServerProcess | undefined;
  try {
    const crashed = await crashMidScaleUp(dataDir);
    server = crashed.server;
    const before = await group(server);
    assert.ok(
      crashed.left.length > 0 && before.desired_capacity === 0,
      `the kill landed in the window: ${crashed.left.length} records, capacity ${before.desired_capacity}`,
    );
    assert.equal(before.current_size, 0, 'the records are no members');

    const after = (await operatorCall<{ scaling_group: ScalingGroup }>(server, 'PATCH', GROUP, { desired_capacity: 1 })).scaling_group;
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

test('hearth-server killed while a scale-up makes its members: once restarted, it deletes the records left outside the group when the dead lease lapses, with no change', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-scaling-recovery-'));
  let server: ServerProcess | undefined;
  try {
    const crashed = await crashMidScaleUp(dataDir);
    server = crashed.server;
    const before = await group(server);
    assert.ok(crashed.left.length > 0 && before.desired_capacity === 0, `the kill landed in the window: ${crashed.left.length} records`);

    // Nothing asks the group for a change: the records go by themselves once the dead change's lease lapsed.
    const deadline = crashed.leaseTaken + SCALING_LEASE_MS + 30_000;
    while (Date.now() < deadline && (await servers(server)).length > 0) await sleep(500);
    assert.deepEqual(await servers(server), [], 'no server record left outside the group');
    assert.ok(Date.now() >= crashed.leaseTaken + SCALING_LEASE_MS, 'not before the lease lapsed');
    const events = await operatorCall<{ events: Event[] }>(server, 'GET', '/v1/default/events?type=scaling_group.recovered');
    // The count is of reservations, made into records or not yet (the kill stopped the creates).
    assert.equal(events.events.length, 1, JSON.stringify(events.events));
    assert.match(
      events.events[0]!.message,
      /^\d+ member record\(s\) a change of g left unfinished deleted without waiting for a change of the group$/,
    );
    const after = await group(server);
    assert.equal(after.desired_capacity, 0);
    assert.deepEqual(after.members, []);
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
