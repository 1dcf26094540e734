// Scaling writes that read a group or policy outside their transaction can lose a race: another
// request changes or deletes it before they commit. Each test lets the competing request win
// deterministically (it runs just before the chosen unit reaches the writer). The loser must get a
// coded 4xx, never a 500, and must neither undo the winner's change nor write after a delete.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ScalingPolicy } from '@hearth/protocol';
import { ADMIN, errorCode, injectUrl, registerServer, beforeWrite } from '../../test-support.ts';
import { GROUPS, POLICIES, patchGroup, raceApp, raceGroup, showGroup } from './scaling-race-support.ts';

const patch = patchGroup;
// A group of 0 members delivers nothing until its capacity changes (only on the old code's lost races here).
const setup = async (app: FastifyInstance) => void (await raceGroup(app, { max_size: 10 }));
const eventTypes = async (app: FastifyInstance) =>
  (await app.services.store.reader.selectFrom('events').select('type').orderBy('id').execute()).map((e) => e.type);

test('two group updates at once: the later keeps the earlier one bounds, and is judged against them', async () => {
  const { app, done } = await raceApp();
  try {
    await setup(app);
    const first = beforeWrite(app.services.store, () => patch(app, { max_size: 2 }));
    const second = await patch(app, { cooldown: 30 });
    assert.equal(first.reply().statusCode, 200, first.reply().body);
    assert.equal(second.statusCode, 200, second.body);
    let group = await showGroup(app);
    assert.deepEqual([group.min_size, group.max_size, group.cooldown], [0, 2, 30], 'max_size 2 of the first update is not undone');

    // min_size 8 is valid against the bounds the second request read, not against those now stored.
    const narrowed = beforeWrite(app.services.store, () => patch(app, { max_size: 3 }));
    const refused = await patch(app, { min_size: 8 });
    assert.equal(narrowed.reply().statusCode, 200, narrowed.reply().body);
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(errorCode(refused), 'ERR_SCALING_GROUP_INVALID');
    assert.match(refused.json().error.message, /max_size 3 is smaller than min_size 8/);
    group = await showGroup(app);
    assert.deepEqual([group.min_size, group.max_size, group.desired_capacity], [0, 3, 0], 'the refused update changed nothing');
  } finally {
    await done();
  }
});

test('a group updated, or its members changed, while it is deleted: coded 404, nothing written after the delete', async () => {
  const { app, done } = await raceApp();
  try {
    const vm = await registerServer(app, 'vm1');
    for (const [what, request] of [
      ['update', () => patch(app, { max_size: 9 })],
      ['members', () => app.inject({ method: 'POST', url: `${GROUPS}/g/members`, headers: ADMIN, payload: { add: [vm.id] } })],
    ] as const) {
      await setup(app);
      const deleted = beforeWrite(app.services.store, () => app.inject({ method: 'DELETE', url: `${GROUPS}/g`, headers: ADMIN }));
      const reply = await request();
      assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
      assert.equal(reply.statusCode, 404, `${what}: ${reply.body}`);
      assert.equal(errorCode(reply), 'ERR_SCALING_GROUP_NOT_FOUND');
      assert.equal((await eventTypes(app)).at(-1), 'scaling_group.deleted', `${what}: no event after the delete`);
      assert.deepEqual(
        await app.services.store.reader.selectFrom('scaling_members').selectAll().execute(),
        [],
        `${what}: no orphan member`,
      );
      const stackDeleted = await app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN });
      assert.equal(stackDeleted.statusCode, 204, stackDeleted.body);
    }
  } finally {
    await done();
  }
});

test('a group deleted between an update of its bounds and the change of its capacity: coded 404, not a 500', async () => {
  const { app, done } = await raceApp();
  try {
    await setup(app);
    const deleted = beforeWrite(app.services.store, () => app.inject({ method: 'DELETE', url: `${GROUPS}/g`, headers: ADMIN }), 1);
    const reply = await patch(app, { min_size: 1 });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(reply.statusCode, 404, reply.body);
    assert.equal(errorCode(reply), 'ERR_SCALING_GROUP_NOT_FOUND');
  } finally {
    await done();
  }
});

test('policy rotate, revoke and delete racing each other: the stored key is the one revoked, a deleted policy is a 404', async () => {
  const { app, done } = await raceApp();
  try {
    await setup(app);
    const createPolicy = async () => {
      const reply = await app.inject({
        method: 'POST',
        url: POLICIES,
        headers: ADMIN,
        payload: { name: 'up', group: 'g', adjustment_type: 'change_in_capacity', scaling_adjustment: 0 },
      });
      assert.equal(reply.statusCode, 201, reply.body);
      return reply.json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
    };
    const action = (name: string) => () => app.inject({ method: 'POST', url: `${POLICIES}/up/${name}`, headers: ADMIN });
    const credentials = async () =>
      app.services.store.reader.selectFrom('resource_credentials').select('access_key_id').where('kind', '=', 'scaling_policy').execute();
    await createPolicy();

    const firstRotation = beforeWrite(app.services.store, action('rotate'));
    const secondRotation = await action('rotate')();
    assert.equal(firstRotation.reply().statusCode, 200, firstRotation.reply().body);
    assert.equal(secondRotation.statusCode, 200, secondRotation.body);
    const first = firstRotation.reply().json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
    const second = secondRotation.json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
    assert.equal((await credentials()).length, 1, 'one live key per policy');
    const stale = await injectUrl(app, 'POST', first.alarm_url!, {});
    assert.equal(stale.statusCode, 403, `the first rotation's URL is revoked by the second: ${stale.body}`);
    const live = await injectUrl(app, 'POST', second.alarm_url!, {});
    assert.equal(live.statusCode, 200, live.body);

    const rotated = beforeWrite(app.services.store, action('rotate'));
    const revoked = await action('revoke')();
    assert.equal(rotated.reply().statusCode, 200, rotated.reply().body);
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(await credentials(), [], 'revoking after a rotation leaves no key');

    for (const name of ['rotate', 'revoke', 'delete']) {
      const deleted = beforeWrite(app.services.store, () => app.inject({ method: 'DELETE', url: `${POLICIES}/up`, headers: ADMIN }));
      const reply = await (name === 'delete' ? app.inject({ method: 'DELETE', url: `${POLICIES}/up`, headers: ADMIN }) : action(name)());
      assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
      assert.equal(reply.statusCode, 404, `${name}: ${reply.body}`);
      assert.equal(errorCode(reply), 'ERR_SCALING_POLICY_NOT_FOUND');
      assert.deepEqual(await credentials(), [], `${name}: no key left for a deleted policy`);
      assert.equal((await eventTypes(app)).at(-1), 'scaling_policy.deleted', `${name}: nothing written after the delete`);
      await createPolicy();
    }
  } finally {
    await done();
  }
});
