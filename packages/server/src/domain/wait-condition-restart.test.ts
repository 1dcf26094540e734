// Wait-condition deadlines across a hearth-server restart: those of conditions created before it that
// passed while it was not running, or pass during the grace, are held for the restart grace, so a
// signal that cfn-signal or curl on a VM queued during the outage still counts. Once the grace is over,
// the silent ones fail with a reason that says hearth-server was down or restarted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import type { WaitCondition } from '@hearth/protocol';
import { buildApp } from '../app.ts';
import { ADMIN, injectUrl, testStore } from '../test-support.ts';
import { WaitConditionGrace } from './wait-condition-grace.ts';
import { WaitConditionService } from './wait-conditions.ts';
import { WaitConditionSweeper } from './wait-condition-sweeper.ts';
import { HearthError } from './errors.ts';

/** hearth-server on the test's store, with its default restart grace for wait conditions (6 min). */
function openApp(store: { dataDir: string; databaseUrl?: string | undefined }): Promise<FastifyInstance> {
  return buildApp({
    dataDir: store.dataDir,
    databaseUrl: store.databaseUrl,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
  });
}

interface Handle {
  cfn_url: string;
  signal_url: string;
}

/** Creates a wait condition in stack `s`; returns its handle. */
async function createCondition(app: FastifyInstance, name: string, count: number, timeout: number): Promise<Handle> {
  const reply = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/s/wait_conditions',
    headers: ADMIN,
    payload: { name, count, timeout },
  });
  assert.equal(reply.statusCode, 201, reply.body);
  return reply.json<{ wait_condition: { handle: Handle } }>().wait_condition.handle;
}

/** A condition as the operator reads it. */
async function conditionOf(app: FastifyInstance, name: string): Promise<WaitCondition> {
  const reply = await app.inject({ url: `/v1/default/stacks/s/wait_conditions/${name}`, headers: ADMIN });
  assert.equal(reply.statusCode, 200, reply.body);
  return reply.json<{ wait_condition: WaitCondition }>().wait_condition;
}

/** cfn-signal's body (a CFN handle takes all four). */
function cfnBody(id: string, reason: string) {
  return { Status: 'SUCCESS', Reason: reason, UniqueId: id, Data: `data of ${id}` };
}

test('after a restart, a signal queued during the outage still counts on a condition whose deadline passed meanwhile', async () => {
  const store = await testStore();
  try {
    const before = await openApp(store);
    assert.equal(
      (await before.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 's' } })).statusCode,
      201,
    );
    const late = await createCondition(before, 'late', 1, 1);
    const pair = await createCondition(before, 'pair', 2, 1);
    await createCondition(before, 'silent', 1, 1);
    await createCondition(before, 'beat', 1, 1);
    const first = await injectUrl(before, 'PUT', pair.cfn_url, cfnBody('vm1', 'vm1 up'), { 'content-type': 'application/json' });
    assert.equal(first.statusCode, 200, first.body);
    await before.close();
    await sleep(1500); // every deadline passes while no hearth-server runs

    const after = await openApp(store);
    try {
      await sleep(1200); // the sweeper (every 0.5 s) has had its chances
      assert.equal((await conditionOf(after, 'silent')).status, 'IN_PROGRESS', 'held during the restart grace');

      const signalled = await injectUrl(after, 'PUT', late.cfn_url, cfnBody('vm1', 'queued during the outage'), {
        'content-type': 'application/json',
      });
      assert.equal(signalled.statusCode, 200, signalled.body);
      const done = await conditionOf(after, 'late');
      assert.equal(done.status, 'COMPLETE');
      assert.equal(done.status_reason, '1 of 1 received');

      // Count 2: the first signal came before the outage, the second after it.
      const second = await injectUrl(after, 'PUT', pair.cfn_url, cfnBody('vm2', 'vm2 up'), { 'content-type': 'application/json' });
      assert.equal(second.statusCode, 200, second.body);
      const both = await conditionOf(after, 'pair');
      assert.equal(both.status, 'COMPLETE');
      assert.equal(both.status_reason, '2 of 2 received');
      assert.deepEqual(both.data, { vm1: 'data of vm1', vm2: 'data of vm2' });

      // A heartbeat during the grace extends a held condition rather than timing it out.
      const beat = await after.inject({
        method: 'POST',
        url: '/v1/default/stacks/s/wait_conditions/beat/heartbeat',
        headers: ADMIN,
        payload: { extend: 600 },
      });
      assert.equal(beat.statusCode, 200, beat.body);
      const extended = beat.json<{ wait_condition: WaitCondition }>().wait_condition;
      assert.equal(extended.status, 'IN_PROGRESS');
      assert.ok(Date.parse(extended.deadline) > Date.now() + 500_000, `deadline ${extended.deadline}`);

      // A condition created after the start is not held: it times out at its deadline.
      await createCondition(after, 'fresh', 1, 1);
      let fresh = await conditionOf(after, 'fresh');
      for (let i = 0; i < 40 && fresh.status === 'IN_PROGRESS'; i++) {
        await sleep(100);
        fresh = await conditionOf(after, 'fresh');
      }
      assert.equal(fresh.status, 'FAILED');
      assert.equal(fresh.status_reason, 'WaitConditionTimeout: 0 of 1 received');
      assert.equal((await conditionOf(after, 'silent')).status, 'IN_PROGRESS', 'still held');
    } finally {
      await after.close();
    }
  } finally {
    await store.remove();
  }
});

test('once the restart grace is over, held conditions time out saying why; a deadline after the grace is not held', async () => {
  const GRACE_MS = 3000;
  const store = await testStore();
  try {
    const before = await openApp(store);
    assert.equal(
      (await before.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 's' } })).statusCode,
      201,
    );
    const created = Date.now();
    await createCondition(before, 'down', 1, 1); // passes while no hearth-server runs
    await createCondition(before, 'half', 2, 1); // one of two signals before the outage, one during the grace
    await createCondition(before, 'during', 1, 3); // passes during the grace
    await createCondition(before, 'far', 1, 6); // passes after the grace
    await before.close();
    await sleep(Math.max(0, created + 1500 - Date.now()));

    // The app's own service and sweeper hold every condition here for 6 min: this test's, on the same
    // store, hold them for GRACE_MS from the restart.
    const started = Date.now();
    const after = await openApp(store);
    try {
      const { services } = after;
      const grace = new WaitConditionGrace(GRACE_MS, started);
      const sweeper = new WaitConditionSweeper(services.store, (error) => assert.fail(String(error)), grace);
      const conditions = new WaitConditionService(
        services.store,
        services.feed,
        services.stacks,
        { publicUrl: services.publicUrl, secrets: services.secrets },
        grace,
      );
      const idOf = async (name: string) =>
        (await services.store.reader.selectFrom('wait_conditions').select('id').where('name', '=', name).executeTakeFirstOrThrow()).id;
      const signal = async (name: string, id: string) =>
        conditions.signal(await idOf(name), { status: 'SUCCESS', reason: `${id} up`, data: null, id });
      const reasons = async () =>
        Object.fromEntries(
          (await services.store.reader.selectFrom('wait_conditions').select(['name', 'status', 'status_reason']).execute()).map((row) => [
            row.name,
            `${row.status} ${row.status_reason ?? ''}`.trim(),
          ]),
        );

      assert.equal((await signal('half', 'vm1')).status, 'IN_PROGRESS', 'a signal during the grace counts');
      await sleep(Math.max(0, created + 3300 - Date.now()));
      await sweeper.expireDue();
      assert.deepEqual(await reasons(), {
        down: 'IN_PROGRESS',
        half: 'IN_PROGRESS',
        during: 'IN_PROGRESS',
        far: 'IN_PROGRESS',
      });

      await sleep(Math.max(0, started + GRACE_MS + 200 - Date.now()));
      // After the grace, a late signal meets the timeout first, as any signal past its deadline does.
      await assert.rejects(
        signal('half', 'vm2'),
        (error: unknown) => error instanceof HearthError && error.code === 'ERR_WAIT_CONDITION_DONE',
      );
      await sweeper.expireDue();
      const waited = 'it waited 3 s after starting for a late signal';
      assert.deepEqual(await reasons(), {
        down: `FAILED WaitConditionTimeout: 0 of 1 received (hearth-server was not running when the deadline passed; ${waited})`,
        half: `FAILED WaitConditionTimeout: 1 of 2 received - vm1 up (hearth-server was not running when the deadline passed; ${waited})`,
        during: `FAILED WaitConditionTimeout: 0 of 1 received (hearth-server restarted while it ran; ${waited})`,
        far: 'IN_PROGRESS',
      });
      const events = await after.inject({ url: `/v1/default/events?resource_id=${await idOf('during')}`, headers: ADMIN });
      const failed = events
        .json<{ events: Array<{ type: string; message: string }> }>()
        .events.find((e) => e.type === 'wait_condition.failed');
      assert.match(failed?.message ?? '', /\(hearth-server restarted while it ran; /);

      await sleep(Math.max(0, created + 6200 - Date.now()));
      await sweeper.expireDue();
      assert.equal(
        (await reasons()).far,
        'FAILED WaitConditionTimeout: 0 of 1 received',
        'not held, and its reason says nothing of a restart',
      );
    } finally {
      await after.close();
    }
  } finally {
    await store.remove();
  }
});
