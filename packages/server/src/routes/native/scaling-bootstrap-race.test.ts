// A member_bootstrap scale-up writes in two transactions: the new members' server records first, then
// the capacity. A group update or another change can commit in between (an operator change does not
// wait for the scaling lease). Each test lets it win deterministically, just before the capacity
// write, and checks that the group ends with as many members as its desired capacity, that only the
// members the change kept are in the webhook, and that the records it did not keep are deleted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { LightMyRequestResponse } from 'fastify';
import type { ActuatorWebhook, ScalingGroup } from '@hearth/protocol';
import type { Store } from '../../store/store.ts';
import { ADMIN, beforeWrite } from '../../test-support.ts';
import { POLICIES, patchGroup, raceApp, raceGroup, showGroup } from './scaling-race-support.ts';

/** Writes of a +2 bootstrap before its capacity write: the lease, then one server record per member. */
const BEFORE_CAPACITY_WRITE = 3;

/** A stack, a bootstrapping group at desired 2 of [0, 5] and a policy `up` that adds 2. */
const setup = async (app: FastifyInstance) =>
  void (await raceGroup(
    app,
    { desired_capacity: 2, member_bootstrap: {} },
    { adjustment_type: 'change_in_capacity', scaling_adjustment: 2 },
  ));

const signal = async (app: FastifyInstance) => {
  const reply = await app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN });
  assert.equal(reply.statusCode, 200, reply.body);
  return reply.json<{ result: { outcome: string; reason: string; previous_capacity: number; desired_capacity: number } }>().result;
};
const patch = patchGroup;
const serverIds = async (app: FastifyInstance) =>
  (await app.services.store.reader.selectFrom('servers').select('id').orderBy('id').execute()).map((s) => s.id);
const webhooks = async (app: FastifyInstance) =>
  (await app.services.store.reader.selectFrom('actuator_deliveries').select('payload').orderBy('sequence').execute()).map(
    (d) => JSON.parse(d.payload) as ActuatorWebhook,
  );
const events = async (app: FastifyInstance) =>
  app.services.store.reader.selectFrom('events').select(['type', 'message']).orderBy('id').execute();

/**
 * Every server record is a member, every member has one, and their number is the desired capacity
 * (or `members`, after a scale-down the provisioner has not carried out yet).
 */
async function assertConsistent(app: FastifyInstance, desired: number, members = desired): Promise<ScalingGroup> {
  const group = await showGroup(app);
  assert.equal(group.desired_capacity, desired);
  assert.equal(group.current_size, members, 'one member per unit of desired capacity');
  assert.deepEqual(group.members.map((m) => m.server_id).sort(), await serverIds(app), 'no server record left outside the group');
  assert.equal(group.scaling_in_progress, false, 'the lease is released');
  const lease = await app.services.store.reader.selectFrom('scaling_groups').select('scaling_lease_id').executeTakeFirstOrThrow();
  assert.equal(lease.scaling_lease_id, null);
  return group;
}

test('member_bootstrap: max_size lowered to the current capacity while members are created: no change, their records deleted', async () => {
  const { app, done } = await raceApp();
  try {
    await setup(app);
    const before = await showGroup(app);
    const lowered = beforeWrite(app.services.store, () => patch(app, { max_size: 2 }), BEFORE_CAPACITY_WRITE);
    const result = await signal(app);
    assert.equal(lowered.reply().statusCode, 200, lowered.reply().body);
    assert.equal(result.outcome, 'no_change', result.reason);
    assert.match(result.reason, /max_size is 2 now/);
    assert.deepEqual([result.previous_capacity, result.desired_capacity], [2, 2]);
    const group = await assertConsistent(app, 2);
    assert.deepEqual(group.members, before.members, 'the old members stay, none is named for removal');
    assert.equal((await webhooks(app)).length, 1, 'only the initial capacity was delivered');
    const log = await events(app);
    assert.ok(log.some((e) => e.type === 'scaling_group.no_change' && /max_size is 2 now/.test(e.message)));
    assert.equal(log.filter((e) => e.type === 'server.deleted').length, 2, 'both records made for the change are deleted');
  } finally {
    await done();
  }
});

test('member_bootstrap: max_size lowered between current and target while members are created: only the members that fit are kept', async () => {
  const { app, done } = await raceApp();
  try {
    await setup(app);
    const before = await showGroup(app);
    const lowered = beforeWrite(app.services.store, () => patch(app, { max_size: 3 }), BEFORE_CAPACITY_WRITE);
    const result = await signal(app);
    assert.equal(lowered.reply().statusCode, 200, lowered.reply().body);
    const group = await assertConsistent(app, 3);
    assert.equal(result.outcome, 'adjusted', result.reason);
    assert.match(result.reason, /desired capacity 2 -> 3 \(max_size is 3 now: 1 of the 2 new members' records deleted\)/);
    const hook = (await webhooks(app)).at(-1)!;
    assert.deepEqual([hook.previous_capacity, hook.desired_capacity, hook.max_size], [2, 3, 3]);
    assert.equal(hook.new_members.length, 1);
    assert.deepEqual(hook.remove_candidates, [], 'nothing to remove: 3 members for a capacity of 3');
    assert.deepEqual(
      hook.members,
      group.members.map((m) => m.server_id),
    );
    assert.deepEqual(
      group.members.slice(0, 2).map((m) => m.server_id),
      before.members.map((m) => m.server_id),
    );
    assert.equal(hook.new_members[0]!.server_id, group.members[2]!.server_id);
  } finally {
    await done();
  }
});

/**
 * Runs `request` (a PATCH) so that its bounds write commits just before the bootstrap's capacity
 * write and its own change of capacity just after it: the order no `beforeWrite` can give.
 */
function patchAroundCapacityWrite(
  store: Store,
  request: () => Promise<LightMyRequestResponse>,
): { reply: () => Promise<LightMyRequestResponse> } {
  const write = store.write.bind(store);
  let seen = 0;
  let reply: Promise<LightMyRequestResponse> | undefined;
  store.write = async (unit) => {
    if (seen++ < BEFORE_CAPACITY_WRITE) return write(unit);
    let boundsWritten!: () => void;
    let capacityWritten!: () => void;
    const bounds = new Promise<void>((resolve) => (boundsWritten = resolve));
    const capacity = new Promise<void>((resolve) => (capacityWritten = resolve));
    let patchWrites = 0;
    store.write = async (patchUnit) => {
      if (patchWrites++ === 0) {
        const written = await write(patchUnit);
        boundsWritten();
        return written;
      }
      await capacity;
      return write(patchUnit);
    };
    reply = request();
    await bounds;
    try {
      return await write(unit);
    } finally {
      store.write = write;
      capacityWritten();
    }
  };
  return {
    reply: () => {
      assert.ok(reply, 'the PATCH did not run');
      return reply;
    },
  };
}

test('member_bootstrap: min_size raised above the target while members are created: the group reaches min_size with one record per member', async () => {
  const { app, done } = await raceApp();
  try {
    await setup(app);
    const raised = patchAroundCapacityWrite(app.services.store, () => patch(app, { min_size: 5 }));
    const result = await signal(app);
    const reply = await raised.reply();
    assert.equal(reply.statusCode, 200, reply.body);
    assert.equal(reply.json<{ scaling_group: ScalingGroup }>().scaling_group.desired_capacity, 5);
    await assertConsistent(app, 5);
    assert.notEqual(result.outcome, 'adjusted', result.reason);
    assert.match(result.reason, /min_size is 5 now/);
    const hooks = await webhooks(app);
    assert.equal(hooks.length, 2, 'the initial capacity and the update');
    assert.deepEqual([hooks[1]!.previous_capacity, hooks[1]!.desired_capacity, hooks[1]!.new_members.length], [2, 5, 3]);
    assert.ok((await events(app)).some((e) => e.type === 'scaling_group.error' && /min_size is 5 now/.test(e.message)));
  } finally {
    await done();
  }
});

test('member_bootstrap: min_size raised or another change made while members are created: the group stays consistent', async () => {
  for (const [what, interloper, desired] of [
    // The update's own change (to its new min_size) takes the lease over: the policy's change gives way.
    ['min_size raised to 3', (app: FastifyInstance) => patch(app, { min_size: 3 }), 3],
    ['min_size raised to 5', (app: FastifyInstance) => patch(app, { min_size: 5 }), 5],
    ['desired_capacity set to 3', (app: FastifyInstance) => patch(app, { desired_capacity: 3 }), 3],
    ['desired_capacity set to 1', (app: FastifyInstance) => patch(app, { desired_capacity: 1 }), 1],
    ['a second signal', (app: FastifyInstance) => app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN }), 4],
  ] as const) {
    const { app, done } = await raceApp();
    try {
      await setup(app);
      const other = beforeWrite(app.services.store, () => interloper(app), BEFORE_CAPACITY_WRITE);
      await signal(app);
      assert.equal(other.reply().statusCode, 200, `${what}: ${other.reply().body}`);
      if (what === 'a second signal') assert.equal(other.reply().json().result.outcome, 'in_progress', what);
      // Set to 1: the two old members stay until the provisioner removes the one the webhook names.
      await assertConsistent(app, desired, Math.max(desired, 2));
      const hook = (await webhooks(app)).at(-1)!;
      assert.equal(hook.desired_capacity, desired, what);
      assert.equal(hook.members.length - hook.remove_candidates.length, desired, `${what}: the webhook keeps as many as desired`);
    } finally {
      await done();
    }
  }
});
