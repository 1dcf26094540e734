// An alarm signal's credential is checked before its write is queued: a revoke, rotation or delete of
// the policy can commit in between. Each test lets that change win deterministically (it runs just
// before the signal's write reaches the writer): once it has answered, the URL must change nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import type { ScalingPolicy } from '@hearth/protocol';
import { ADMIN, beforeWrite, injectUrl, alertmanagerBody } from '../../test-support.ts';
import { POLICIES, raceApp, raceGroup, showGroup } from './scaling-race-support.ts';

const firing = alertmanagerBody;

async function setup(app: FastifyInstance, group: Record<string, unknown> = {}): Promise<ScalingPolicy> {
  return (await raceGroup(app, group, { adjustment_type: 'change_in_capacity', scaling_adjustment: 1 }))!;
}

const operator = (app: FastifyInstance, method: 'POST' | 'DELETE', path: string) => () =>
  app.inject({ method, url: `${POLICIES}/up${path}`, headers: ADMIN });
const lastEvent = async (app: FastifyInstance) =>
  (await app.services.store.reader.selectFrom('events').select('type').orderBy('id', 'desc').executeTakeFirst())?.type;

test('an alarm URL revoked while its signal is in flight: 403, the capacity does not change, nothing is written after the revoke', async () => {
  const { app, done } = await raceApp();
  try {
    const policy = await setup(app);
    for (const [via, send] of [
      ['alarm URL', () => injectUrl(app, 'POST', policy.alarm_url!, firing())],
      ['resolved alert', () => injectUrl(app, 'POST', policy.alarm_url!, firing('resolved'))],
      [
        'signal token',
        () =>
          injectUrl(app, 'POST', policy.signal_url!, firing(), {
            'x-auth-token': policy.signal_token!,
            'content-type': 'application/json',
          }),
      ],
    ] as const) {
      const revoke = beforeWrite(app.services.store, operator(app, 'POST', '/revoke'));
      const reply = await send();
      assert.equal(revoke.reply().statusCode, 200, revoke.reply().body);
      assert.equal(reply.statusCode, 403, `${via}: ${reply.body}`);
      assert.match(reply.body, /ERR_SIGNED_URL_INVALID/, via);
      assert.equal((await showGroup(app)).desired_capacity, 0, `${via}: the revoked URL changed the capacity`);
      assert.equal(await lastEvent(app), 'scaling_policy.revoked', `${via}: nothing written after the revoke`);
      const shown = (await operator(app, 'POST', '/rotate')()).json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
      assert.equal(shown.last_signal, null, `${via}: no last signal recorded`);
      Object.assign(policy, shown);
    }
    // The operator's own signal does not hold the URL's credential and still acts.
    await operator(app, 'POST', '/revoke')();
    const manual = await app.inject({ method: 'POST', url: `${POLICIES}/up/signal`, headers: ADMIN, payload: firing() });
    assert.equal(manual.statusCode, 200, manual.body);
    assert.equal((await showGroup(app)).desired_capacity, 1);
    const viaHeatApi = await app.inject({ method: 'POST', url: new URL(policy.signal_url!).pathname, headers: ADMIN, payload: firing() });
    assert.equal(viaHeatApi.statusCode, 200, viaHeatApi.body);
    assert.equal((await showGroup(app)).desired_capacity, 2);
  } finally {
    await done();
  }
});

test('an alarm URL rotated away or deleted while its signal is in flight: refused, the capacity does not change', async () => {
  const { app, done } = await raceApp();
  try {
    const policy = await setup(app);
    const rotate = beforeWrite(app.services.store, operator(app, 'POST', '/rotate'));
    const stale = await injectUrl(app, 'POST', policy.alarm_url!, firing());
    assert.equal(rotate.reply().statusCode, 200, rotate.reply().body);
    assert.equal(stale.statusCode, 403, stale.body);
    assert.match(stale.body, /ERR_SIGNED_URL_INVALID/);
    assert.equal((await showGroup(app)).desired_capacity, 0);

    const fresh = rotate.reply().json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
    const deleted = beforeWrite(app.services.store, operator(app, 'DELETE', ''));
    const gone = await injectUrl(app, 'POST', fresh.alarm_url!, firing());
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(gone.statusCode, 404, gone.body);
    assert.match(gone.body, /ERR_SCALING_POLICY_NOT_FOUND/);
    assert.equal((await showGroup(app)).desired_capacity, 0);
    assert.equal(await lastEvent(app), 'scaling_policy.deleted');
  } finally {
    await done();
  }
});

test('member_bootstrap: a revoke that commits while the new members are being created stops the change', async () => {
  const { app, done } = await raceApp();
  try {
    const policy = await setup(app, { member_bootstrap: {} });
    // Skip the lease write and the new member's record: the revoke lands just before the capacity is written.
    const revoke = beforeWrite(app.services.store, operator(app, 'POST', '/revoke'), 2);
    const reply = await injectUrl(app, 'POST', policy.alarm_url!, firing());
    assert.equal(revoke.reply().statusCode, 200, revoke.reply().body);
    assert.equal(reply.statusCode, 403, reply.body);
    const group = await showGroup(app);
    assert.equal(group.desired_capacity, 0);
    assert.deepEqual(await app.services.store.reader.selectFrom('servers').select('id').execute(), [], 'the member records are removed');
    const lease = await app.services.store.reader.selectFrom('scaling_groups').select('scaling_lease_id').executeTakeFirstOrThrow();
    assert.equal(lease.scaling_lease_id, null, 'the lease is released');
  } finally {
    await done();
  }
});

test('an alarm URL that expires while its signal is in flight: refused', async () => {
  const { app, done } = await raceApp();
  try {
    await setup(app);
    const rotated = await app.inject({ method: 'POST', url: `${POLICIES}/up/rotate`, headers: ADMIN, payload: { url_expires_in: 1 } });
    const short = rotated.json<{ scaling_policy: ScalingPolicy }>().scaling_policy;
    // The interloper only waits out the expiry: the URL was valid when it was checked.
    const store = app.services.store;
    const write = store.write.bind(store);
    store.write = async (unit) => {
      store.write = write;
      await new Promise((resolve) => setTimeout(resolve, Date.parse(short.expires_at!) + 1000 - Date.now()));
      return write(unit);
    };
    const reply = await injectUrl(app, 'POST', short.alarm_url!, firing());
    assert.equal(reply.statusCode, 403, reply.body);
    assert.match(reply.body, /ERR_SIGNED_URL_EXPIRED/);
    assert.equal((await showGroup(app)).desired_capacity, 0);
  } finally {
    await done();
  }
});
