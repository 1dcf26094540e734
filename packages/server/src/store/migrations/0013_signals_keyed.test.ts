// An upgrade to 0013 on SQLite: the signals table becomes one B-tree keyed by deployment and
// idempotency key. The store is filled through a real app (signals over the guest route, one with an
// Idempotency-Key), then set back to what a hearth before 0013 left (the rowid table with its
// AUTOINCREMENT id and unique constraint, the migration record deleted), then migrated again: every
// row is kept as it was, the key still refuses a second row, a retried signal is still the duplicate
// it was, and a signal's read seeks the key. On PostgreSQL (that pass of the suite) 0013 changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { ADMIN, SQLITE_SIGNALS_BEFORE_0013, appOn, createConfig, createDeployment, registerServer, testStore } from '../../test-support.ts';

test('0013 keys SQLite’s signals by deployment and idempotency key, keeping every row and every duplicate', async (t) => {
  const storage = await testStore('hearth-migrate-0013-');
  t.after(() => storage.remove());
  const open = () => appOn(storage);
  const rows = (app: Awaited<ReturnType<typeof open>>) =>
    app.services.store.reader
      .selectFrom('signals')
      .select(['deployment_id', 'idempotency_key', 'derived_config_id', 'result_status', 'result_reason', 'received_at'])
      .orderBy('deployment_id')
      .orderBy('idempotency_key')
      .execute();
  const body = { deploy_stdout: 'ok', deploy_status_code: 0 };

  let app = await open();
  let vm: Awaited<ReturnType<typeof registerServer>>;
  const deployments: string[] = [];
  /** The signal of deployment `i`: the first with an Idempotency-Key, the third failing. */
  const signal = (to: typeof app, i: number) =>
    to.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${deployments[i]}/signal`,
      headers: { ...vm.auth, ...(i === 0 ? { 'idempotency-key': 'sent-before-0013' } : {}) },
      payload: { ...body, deploy_status_code: i === 2 ? 4 : 0 },
    });
  let before: Awaited<ReturnType<typeof rows>>;
  try {
    vm = await registerServer(app);
    const config = await createConfig(app);
    for (let i = 0; i < 3; i++) deployments.push(await createDeployment(app, config, vm.id));
    for (const i of deployments.keys()) {
      const signalled = await signal(app, i);
      assert.equal(signalled.statusCode, 200, signalled.body);
    }
    before = await rows(app);
    assert.equal(before.length, 3);
    // As a hearth before 0013 left it (on SQLite; PostgreSQL's table never changed).
    await app.services.store.write(async ({ trx }) => {
      if (app.services.store.dialect === 'sqlite')
        for (const statement of SQLITE_SIGNALS_BEFORE_0013) await sql.raw(statement).execute(trx);
      await sql`delete from kysely_migration where name >= ${'0013_signals_keyed'}`.execute(trx);
    });
    assert.deepEqual(await rows(app), before);
  } finally {
    await app.close();
  }

  app = await open();
  try {
    assert.deepEqual(await rows(app), before, 'every row kept as it was');
    // Retried after the upgrade (an agent's outbox): still acknowledged as the duplicates they are.
    for (const i of deployments.keys()) {
      const again = await signal(app, i);
      assert.equal(again.statusCode, 200, again.body);
      assert.equal(again.json().duplicate, true);
      assert.equal(again.json().status, i === 2 ? 'FAILED' : 'COMPLETE');
    }
    // The key refuses a second row with the same deployment and key; the table is otherwise as writable as before.
    const [first] = before;
    await assert.rejects(
      app.services.store.write(async ({ trx }) => {
        await trx
          .insertInto('signals')
          .values({ ...first!, received_at: 'later' })
          .execute();
      }),
      /UNIQUE|unique|duplicate key/,
    );
    assert.deepEqual(await rows(app), before, 'the refused insert changed nothing');
    // A new action takes new signals beside the old ones.
    const redo = await app.inject({
      method: 'PUT',
      url: `/v1/default/software_deployments/${deployments[0]}`,
      headers: ADMIN,
      payload: { action: 'UPDATE', status: 'IN_PROGRESS' },
    });
    assert.equal(redo.statusCode, 200, redo.body);
    const next = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${deployments[0]}/signal`,
      headers: vm.auth,
      payload: body,
    });
    assert.equal(next.statusCode, 200, next.body);
    assert.equal(next.json().duplicate, false);
    assert.equal((await rows(app)).length, 4);

    if (app.services.store.dialect === 'sqlite') {
      const table = await sql<{ sql: string }>`select sql from sqlite_master where type = 'table' and name = 'signals'`.execute(
        app.services.store.reader,
      );
      assert.match(table.rows[0]!.sql, /without rowid/i);
      const indexes = await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'signals'`.execute(
        app.services.store.reader,
      );
      assert.deepEqual(
        indexes.rows.map((row) => row.name),
        [],
        'no second copy of the rows in an index',
      );
      const counters = await sql<{ name: string }>`select name from sqlite_sequence`.execute(app.services.store.reader);
      assert.ok(!counters.rows.some((row) => row.name === 'signals' || row.name === 'signals_keyed'), 'no AUTOINCREMENT counter left');
      const plan = await sql<{ detail: string }>`explain query plan
        select result_status from signals where deployment_id = ${deployments[0]} and idempotency_key = ${'client:sent-before-0013'}`.execute(
        app.services.store.reader,
      );
      assert.match(plan.rows.map((row) => row.detail).join('\n'), /SEARCH signals USING PRIMARY KEY/);
    }
  } finally {
    await app.close();
  }
});
