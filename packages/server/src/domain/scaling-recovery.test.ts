// The restart recovery of member_bootstrap changes (ScalingRecovery) on a store: it recovers a group no
// lease holds at once and waits for a held one's lapse, and a live change renews its lease so that the
// recovery never takes it for a crash's. The real-process kill and restart is in scaling-bootstrap-crash.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ADMIN, testApp } from '../test-support.ts';
import { MEMBER_JOINING } from './scaling-bootstrap.ts';
import { ScalingAdjuster } from './scaling-adjust.ts';
import { ScalingRecovery } from './scaling-recovery.ts';
import { TaskNotice } from './task-health.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Stack `web` with member_bootstrap groups of these names (actuator: a closed loopback port, nothing is sent). */
async function createGroups(app: FastifyInstance, maxSize: number, names: string[]): Promise<void> {
  await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  for (const name of names) {
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_groups',
      headers: ADMIN,
      payload: { name, min_size: 0, max_size: maxSize, actuator: { url: 'http://127.0.0.1:9/' }, member_bootstrap: {} },
    });
    assert.equal(created.statusCode, 201, created.body);
  }
}

test('ScalingRecovery: recovers a free group at once, waits for a held lease through its renewal, passes only at lapses, stops on stop()', async () => {
  const { app, done } = await testApp({ background: false });
  const recoveries: ScalingRecovery[] = [];
  try {
    await createGroups(app, 5, ['free', 'held', 'later']);
    const register = async (name: string) => {
      const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name, stack: 'web' } });
      assert.equal(reply.statusCode, 201, reply.body);
      return reply.json<{ server: { id: string } }>().server.id;
    };
    const [leftover, busy, late] = [await register('leftover'), await register('busy'), await register('late')];
    const store = app.services.store;
    const groups = await store.reader.selectFrom('scaling_groups').select(['id', 'name']).execute();
    const id = (name: string) => groups.find((g) => g.name === name)!.id;
    const setLease = (group: string, lease: string, untilMs: number) =>
      store.write(async ({ trx }) => {
        await trx
          .updateTable('scaling_groups')
          .set({ scaling_lease_id: lease, scaling_lease_until: new Date(untilMs).toISOString() })
          .where('id', '=', id(group))
          .execute();
      });
    const exists = async (server: string) =>
      (await store.reader.selectFrom('servers').select('id').where('id', '=', server).execute()).length > 0;
    const now = new Date().toISOString();
    await store.write(async ({ trx }) => {
      await trx
        .insertInto('scaling_members')
        .values([
          { group_id: id('free'), server_id: leftover, bootstrap: MEMBER_JOINING, added_at: now },
          { group_id: id('held'), server_id: busy, bootstrap: MEMBER_JOINING, added_at: now },
        ])
        .execute();
    });
    // `free`: the lease of a dead change, lapsed; `held`: a change still running, whose lease ends soon.
    await setLease('free', 'dead', Date.now() - 1000);
    await setLease('held', 'live', Date.now() + 1500);

    const adjuster = new ScalingAdjuster(store, app.services.servers, (error) => assert.fail(String(error)));
    let passes = 0;
    const logged: string[] = [];
    const log = (error: unknown) => {
      assert.ok(error instanceof TaskNotice && error.level === 'info', String(error));
      logged.push(error.message);
    };
    const recovery = new ScalingRecovery(
      store,
      (groupId, cause) => {
        passes++;
        return adjuster.recoverLeftovers(groupId, cause);
      },
      log,
    );
    recoveries.push(recovery);
    recovery.start();
    for (let polls = 0; polls < 100 && (await exists(leftover)); polls++) await sleep(20);
    assert.equal(await exists(leftover), false, 'the free group is recovered at once');
    assert.equal(await exists(busy), true, 'the held lease keeps its member');

    // The running change renews its lease before the first one ends: its member stays until the new end.
    const renewedUntil = Date.now() + 2000;
    await setLease('held', 'live', renewedUntil);
    for (let polls = 0; polls < 300 && (await exists(busy)); polls++) await sleep(25);
    assert.equal(await exists(busy), false, 'recovered once the renewed lease lapsed');
    assert.ok(Date.now() >= renewedUntil, 'not before the renewed lease ended');
    assert.ok(passes >= 2 && passes <= 4, `one pass at start and one per lapse, not a loop: ${passes}`);
    await sleep(1500);
    assert.ok(passes <= 4, `no pass with nothing held: ${passes}`);

    // Stopped: a lease that lapses afterwards is left to the next change (or the next start).
    await store.write(async ({ trx }) => {
      await trx
        .insertInto('scaling_members')
        .values({ group_id: id('later'), server_id: late, bootstrap: MEMBER_JOINING, added_at: now })
        .execute();
    });
    await setLease('later', 'live', Date.now() + 800);
    const stopped = new ScalingRecovery(
      store,
      (groupId, cause) => adjuster.recoverLeftovers(groupId, cause),
      (error) => assert.fail(String(error)),
    );
    recoveries.push(stopped);
    stopped.start();
    await sleep(200);
    await stopped.stop();
    await sleep(1800);
    assert.equal(await exists(late), true, 'no timer runs after stop()');

    const events = await store.reader
      .selectFrom('events')
      .select('message')
      .where('type', '=', 'scaling_group.recovered')
      .orderBy('id')
      .execute();
    assert.deepEqual(
      events.map((e) => e.message),
      [
        '1 member record(s) a change of free left unfinished deleted without waiting for a change of the group',
        '1 member record(s) a change of held left unfinished deleted without waiting for a change of the group',
      ],
    );
    assert.deepEqual(logged, [
      'scaling recovery deleted 1 member record(s) that unfinished changes left outside their groups',
      'scaling recovery deleted 1 member record(s) that unfinished changes left outside their groups',
    ]);
  } finally {
    for (const recovery of recoveries) await recovery.stop();
    await done();
  }
});

test("ScalingRecovery: with nothing held it looks again after idleMs, so another replica's crash is recovered without a restart", async () => {
  const { app, done } = await testApp({ background: false });
  let recovery: ScalingRecovery | undefined;
  try {
    await createGroups(app, 5, ['g']);
    const registered = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'left' } });
    const left = registered.json<{ server: { id: string } }>().server.id;
    const store = app.services.store;
    const adjuster = new ScalingAdjuster(store, app.services.servers, (error) => assert.fail(String(error)));
    let passes = 0;
    recovery = new ScalingRecovery(
      store,
      (groupId, cause) => {
        passes++;
        return adjuster.recoverLeftovers(groupId, cause);
      },
      () => undefined,
      300,
    );
    recovery.start();
    for (let polls = 0; polls < 100 && passes === 0; polls++) await sleep(10);
    // After this process's start pass: another replica takes the lease, reserves a member, and dies.
    const { id } = await store.reader.selectFrom('scaling_groups').select('id').executeTakeFirstOrThrow();
    await store.write(async ({ trx, now }) => {
      await trx
        .updateTable('scaling_groups')
        .set({ scaling_lease_id: 'dead replica', scaling_lease_until: new Date(Date.parse(now) - 1000).toISOString() })
        .where('id', '=', id)
        .execute();
      await trx.insertInto('scaling_members').values({ group_id: id, server_id: left, bootstrap: MEMBER_JOINING, added_at: now }).execute();
    });
    const gone = async () => (await store.reader.selectFrom('servers').select('id').where('id', '=', left).execute()).length === 0;
    for (let polls = 0; polls < 200 && !(await gone()); polls++) await sleep(25);
    assert.ok(await gone(), `recovered without a restart or a change (${passes} passes)`);
  } finally {
    await recovery?.stop();
    await done();
  }
});

test('a scale-up that makes its members for longer than its lease renews the lease: a recovery meanwhile deletes none of them', async () => {
  const { app, done } = await testApp({ background: false });
  let recovery: ScalingRecovery | undefined;
  try {
    await createGroups(app, 400, ['g']);
    const store = app.services.store;
    const { id } = await store.reader.selectFrom('scaling_groups').select('id').executeTakeFirstOrThrow();
    // A lease of 1 s, and records made at least 15 ms apart: 120 of them take longer than the lease, so without
    // renewals it lapses mid-change. Renewed every third of it, only a single create stalled over 0.6 s could
    // lose it (a loaded machine stalls for far less).
    const real = app.services.servers;
    const servers = new Proxy(real, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === 'create')
          return async (...args: Parameters<typeof real.create>) => {
            await sleep(15);
            return real.create(...args);
          };
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const adjuster = new ScalingAdjuster(store, servers, (error) => assert.fail(String(error)), 1000);
    const started = Date.now();
    const change = adjuster.adjust(id, { target: () => 120, cooldown: null, cooldownReason: '', reason: 'test' });
    // Another replica's recovery, started while the change runs: it finds the lease and waits for its lapse.
    for (let polls = 0; polls < 200; polls++) {
      const held = await store.reader
        .selectFrom('scaling_groups')
        .select('scaling_lease_id')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      if (held.scaling_lease_id !== null) break;
      await sleep(5);
    }
    recovery = new ScalingRecovery(
      store,
      (groupId, cause) => adjuster.recoverLeftovers(groupId, cause),
      () => undefined,
    );
    recovery.start();
    const result = await change;
    const took = Date.now() - started;
    assert.equal(result.outcome, 'adjusted', result.reason);
    // The recovery first looks 100 ms after the lease's end: a change that took longer would have lost its records.
    assert.ok(took > 1100, `the change outlasted its lease and the recovery's first look (${took} ms)`);
    const members = await store.reader.selectFrom('scaling_members').select('bootstrap').where('group_id', '=', id).execute();
    assert.equal(members.length, 120);
    assert.ok(members.every((m) => m.bootstrap === 1));
    assert.equal((await store.reader.selectFrom('servers').select('id').execute()).length, 120);
    const recovered = await store.reader.selectFrom('events').select('id').where('type', '=', 'scaling_group.recovered').execute();
    assert.deepEqual(recovered, []);
  } finally {
    await recovery?.stop();
    await done();
  }
});
