// Many wait conditions past their deadline at once: one sweep fails them all, with Heat's reason and
// one event each, and the server's event loop keeps turning while it does.
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { WaitCondition } from '@hearth/protocol';
import { WaitConditionSweeper } from './wait-condition-sweeper.ts';
import { WaitConditionGrace } from './wait-condition-grace.ts';
import { ADMIN, injectUrl, testApp } from '../test-support.ts';

/** More than one page of due conditions (500). */
const DUE = 700;
/** Longest the event loop may stall during the sweep: a wide margin over the ~100 ms measured on a loaded machine (over 2 s before chunked sweeps). */
const TURN_WITHIN_MS = 500;

test(`one sweep fails ${DUE} due wait conditions with Heat's reasons, one event each, and the event loop keeps turning`, async () => {
  // The app's own sweeper (a setInterval) never runs: this test's sweeper is the only one.
  mock.timers.enable({ apis: ['setInterval'] });
  const { app, done } = await testApp();
  try {
    const stack = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 's' } });
    assert.equal(stack.statusCode, 201, stack.body);
    const stackId = stack.json<{ stack: { id: string } }>().stack.id;
    const create = (name: string, timeout: number) =>
      app.inject({ method: 'POST', url: '/v1/default/stacks/s/wait_conditions', headers: ADMIN, payload: { name, count: 2, timeout } });
    const signalled = await create('signalled', 1);
    assert.equal(signalled.statusCode, 201, signalled.body);
    const handle = signalled.json<{ wait_condition: { handle: { signal_url: string } } }>().wait_condition.handle;
    const first = await injectUrl(app, 'POST', handle.signal_url, { id: 'a', reason: 'in time' }, { 'content-type': 'application/json' });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal((await create('later', 3600)).statusCode, 201);
    const { store } = app.services;
    const past = new Date(Date.now() - 1000).toISOString();
    await store.write(async ({ trx, now }) => {
      const rows = Array.from({ length: DUE }, (_, i) => ({
        id: randomUUID(),
        project_id: 'default',
        stack_id: stackId,
        name: `due-${i}`,
        count: 1,
        timeout_s: 60,
        max_failures: null,
        min_success_percent: null,
        status: 'IN_PROGRESS',
        status_reason: null,
        deadline_at: past,
        access_key_id: `AKTEST${String(i).padStart(8, '0')}`,
        urls_expire_at: null,
        generation: 1,
        created_at: now,
        updated_at: null,
      }));
      for (let from = 0; from < rows.length; from += 250)
        await trx
          .insertInto('wait_conditions')
          .values(rows.slice(from, from + 250))
          .execute();
    });
    await sleep(1100); // the signalled condition's deadline (1 s) passes

    // The longest the event loop went without running a 5 ms timer while the sweep ran.
    let longestGap = 0;
    let ticking = true;
    const ticker = (async () => {
      let last = performance.now();
      while (ticking) {
        await sleep(5);
        const now = performance.now();
        longestGap = Math.max(longestGap, now - last);
        last = now;
      }
    })();
    // No restart grace: the rows written above predate this sweeper, as if made before a restart.
    const sweeper = new WaitConditionSweeper(store, (error) => assert.fail(String(error)), new WaitConditionGrace(0));
    const looked = await sweeper.expireDue();
    ticking = false;
    await ticker;

    assert.equal(looked, DUE + 1);
    const rows = await store.reader.selectFrom('wait_conditions').select(['name', 'status', 'status_reason', 'generation']).execute();
    const byName = new Map(rows.map((row) => [row.name, row]));
    for (let i = 0; i < DUE; i++) {
      const row = byName.get(`due-${i}`)!;
      assert.equal(row.status, 'FAILED', `due-${i} was left ${row.status}`);
      assert.equal(row.status_reason, 'WaitConditionTimeout: 0 of 1 received');
      assert.equal(row.generation, 2);
    }
    const view = (name: string) =>
      app
        .inject({ url: `/v1/default/stacks/s/wait_conditions/${name}`, headers: ADMIN })
        .then((reply) => reply.json<{ wait_condition: WaitCondition }>().wait_condition);
    const late = await view('signalled');
    assert.equal(late.status, 'FAILED');
    assert.equal(late.status_reason, 'WaitConditionTimeout: 1 of 2 received - in time');
    assert.equal((await view('later')).status, 'IN_PROGRESS', 'a condition with time left is not failed');
    const events = await store.reader.selectFrom('events').select(['resource_id']).where('type', '=', 'wait_condition.failed').execute();
    assert.equal(events.length, DUE + 1, 'one failed event per condition');
    assert.equal(new Set(events.map((e) => e.resource_id)).size, DUE + 1);
    assert.ok(longestGap < TURN_WITHIN_MS, `the event loop stalled for ${Math.round(longestGap)} ms during the sweep`);

    // A second sweep finds nothing left to do.
    assert.equal(await sweeper.expireDue(), 0);
  } finally {
    await done();
    mock.timers.reset();
  }
});
