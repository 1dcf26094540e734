import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import BetterSqlite from 'better-sqlite3';
import { Migrator, sql, type Kysely } from 'kysely';
import { buildApp } from '../app.ts';
import { ADMIN, TEST_DIALECT, appOn, createConfig, createDeployment, registerServer, testStore } from '../test-support.ts';
import { migrations } from './migrations.ts';
import { openPostgresPool } from './postgres.ts';
import { openSqlite } from './sqlite.ts';
import { openStore, sqliteFile } from './store.ts';
import type { Database } from './schema.ts';

/** A Kysely on the test store's database, outside any app (for building an older schema). */
function rawDatabase(storage: { dataDir: string; databaseUrl: string | undefined }): { db: Kysely<Database>; close(): Promise<void> } {
  if (TEST_DIALECT === 'postgres') {
    const { db } = openPostgresPool(storage.databaseUrl!, (error) => console.error(error));
    return { db, close: () => db.destroy() };
  }
  const handles = openSqlite(sqliteFile(storage.dataDir));
  return {
    db: handles.writer,
    async close() {
      await handles.writer.destroy();
      await handles.reader.destroy();
    },
  };
}

test('0005 drops the signal bodies: a signal stored before it still answers its duplicate, and nothing else is lost', async (t) => {
  const storage = await testStore('hearth-migrate-');
  t.after(() => storage.remove());
  const old = rawDatabase(storage);
  const ids = { server: randomUUID(), config: randomUUID(), deployment: randomUUID(), derived: randomUUID() };
  const now = new Date().toISOString();
  const body = { deploy_stdout: 'ok', deploy_stderr: '', deploy_status_code: 0 };
  try {
    const migrator = new Migrator({ db: old.db, provider: { getMigrations: () => Promise.resolve(migrations(TEST_DIALECT)) } });
    const upTo4 = await migrator.migrateTo('0004_metrics_alarms');
    assert.equal(upTo4.error, undefined);
    // Rows as hearth wrote them before 0005 (the signal keeps its body).
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const db = old.db as unknown as Kysely<any>;
    await db.insertInto('projects').values({ id: 'default', name: 'default', created_at: now }).execute();
    await db
      .insertInto('software_configs')
      .values({
        id: ids.config,
        project_id: 'default',
        name: 'c',
        group_name: 'script',
        config: '',
        inputs: '[]',
        outputs: '[]',
        options: '{}',
        created_at: now,
      })
      .execute();
    await db
      .insertInto('software_deployments')
      .values({
        id: ids.deployment,
        project_id: 'default',
        server_id: ids.server,
        config_id: ids.config,
        derived_config_id: ids.derived,
        derived_at: now,
        action: 'CREATE',
        status: 'COMPLETE',
        status_reason: 'Outputs received',
        input_values: '{}',
        output_values: JSON.stringify(body),
        signal_transport: 'HEARTH_SIGNAL',
        timeout_s: 60,
        created_at: now,
      })
      .execute();
    await db
      .insertInto('signals')
      .values({
        deployment_id: ids.deployment,
        derived_config_id: ids.derived,
        idempotency_key: 'client:sent-before-the-upgrade',
        body: JSON.stringify(body),
        result_status: 'COMPLETE',
        result_reason: 'Outputs received',
        received_at: now,
      })
      .execute();
  } finally {
    await old.close();
  }

  const app = await appOn(storage);
  try {
    const stored = await app.services.store.reader.selectFrom('signals').selectAll().execute();
    assert.equal(stored.length, 1);
    // SQLite's table is keyed by deployment and key since 0013, without the unused serial id PostgreSQL keeps.
    assert.deepEqual(Object.keys(stored[0]!).sort(), [
      'body',
      'deployment_id',
      'derived_config_id',
      ...(storage.databaseUrl ? ['id'] : []),
      'idempotency_key',
      'received_at',
      'result_reason',
      'result_status',
    ]);
    // 0009 brought the column back for older replicas, empty: the body stored before 0005 is gone.
    assert.equal((stored[0] as Record<string, unknown>).body, null);
    assert.equal(stored[0]!.idempotency_key, 'client:sent-before-the-upgrade');
    const shown = await app.inject({ url: `/v1/default/software_deployments/${ids.deployment}`, headers: ADMIN });
    assert.deepEqual(shown.json().software_deployment.output_values, body, 'the outputs are the deployment’s, kept');
    // The agent's outbox retries the signal after the upgrade: acknowledged as the duplicate it is.
    const vm = await registerServer(app);
    await app.services.store.write(async ({ trx }) => {
      await trx.updateTable('software_deployments').set({ server_id: vm.id }).where('id', '=', ids.deployment).execute();
    });
    const retried = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${ids.deployment}/signal`,
      headers: { ...vm.auth, 'idempotency-key': 'sent-before-the-upgrade' },
      payload: body,
    });
    assert.equal(retried.statusCode, 200, retried.body);
    assert.deepEqual(retried.json(), {
      deployment_id: ids.deployment,
      status: 'COMPLETE',
      status_reason: 'Outputs received',
      duplicate: true,
    });
    const other = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${ids.deployment}/signal`,
      headers: { ...vm.auth, 'idempotency-key': 'a-new-one' },
      payload: body,
    });
    assert.equal(other.statusCode, 409, 'a new signal for the settled deployment is still refused');
  } finally {
    await app.close();
  }
});

test('a replica of a release before 0005, still running after a newer one migrated, stores its signals', async (t) => {
  const storage = await testStore('hearth-migrate-rolling-');
  t.after(() => storage.remove());
  const app = await appOn(storage);
  try {
    const vm = await registerServer(app);
    const config = await createConfig(app);
    const deployment = await createDeployment(app, config, vm.id);
    const { derived_config_id: derived } = await app.services.store.reader
      .selectFrom('software_deployments')
      .select('derived_config_id')
      .where('id', '=', deployment)
      .executeTakeFirstOrThrow();
    const body = JSON.stringify({ deploy_stdout: 'ok', deploy_status_code: 0 });
    // The statement that release's signal route runs (it still names body), on the migrated database.
    await app.services.store.write(async ({ trx, now }) => {
      await sql`insert into signals (deployment_id, derived_config_id, idempotency_key, body, result_status, result_reason, received_at)
        values (${deployment}, ${derived}, ${'client:from-an-older-replica'}, ${body}, ${'COMPLETE'}, ${'Outputs received'}, ${now})`.execute(
        trx,
      );
    });
    // This release's own signals go on beside it, and leave the column empty.
    const signalled = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${deployment}/signal`,
      headers: { ...vm.auth, 'idempotency-key': 'from-this-release' },
      payload: { deploy_stdout: 'ok', deploy_status_code: 0 },
    });
    assert.equal(signalled.statusCode, 200, signalled.body);
    const stored = await app.services.store.reader
      .selectFrom('signals')
      .select(['idempotency_key', sql<string | null>`body`.as('body')])
      .where('deployment_id', '=', deployment)
      .orderBy('idempotency_key')
      .execute();
    assert.deepEqual(stored, [
      { idempotency_key: 'client:from-an-older-replica', body },
      { idempotency_key: 'client:from-this-release', body: null },
    ]);
  } finally {
    await app.close();
  }
});

test('a database migrated by a newer hearth-server is refused with what to do, and left as it was', async (t) => {
  const storage = await testStore('hearth-migrate-newer-');
  t.after(() => storage.remove());
  const newer = openStore(storage);
  try {
    await newer.migrate();
    // What a later version's start leaves behind: one more migration recorded.
    await newer.write(async ({ trx, now }) => {
      await sql`insert into kysely_migration (name, timestamp) values (${'0099_from_the_future'}, ${now})`.execute(trx);
    });
  } finally {
    await newer.close();
  }
  const older = openStore(storage);
  try {
    await assert.rejects(older.migrate(), (error: Error) => {
      assert.match(error.message, /the database has migration 0099_from_the_future, which this hearth-server does not know/);
      assert.match(error.message, /a newer hearth-server migrated it, so run that version \(or newer\) here too/);
      assert.doesNotMatch(error.message, /corrupted/);
      return true;
    });
    const recorded = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(older.reader);
    assert.deepEqual(
      recorded.rows.map((row) => row.name),
      [...Object.keys(migrations(TEST_DIALECT)), '0099_from_the_future'],
      'nothing was applied or removed',
    );
  } finally {
    await older.close();
  }
});

/** Every `table.column` of the SQLite file holding a text value with a NUL character. */
function columnsWithNul(file: string): string[] {
  const db = new BetterSqlite(file, { readonly: true });
  try {
    const found: string[] = [];
    const tables = db.prepare(`select name from sqlite_master where type = 'table'`).pluck().all() as string[];
    for (const table of tables) {
      for (const column of db.prepare(`select name from pragma_table_info(?)`).pluck().all(table) as string[]) {
        const count = db.prepare(`select count(*) from "${table}" where instr("${column}", char(0)) > 0`).pluck().get() as number;
        if (count > 0) found.push(`${table}.${column}`);
      }
    }
    return found.sort();
  } finally {
    db.close();
  }
}

test(
  '0007 rewrites the NULs SQLite stored before the store refused them: old rows can be changed and deleted again',
  { skip: TEST_DIALECT !== 'sqlite' && 'PostgreSQL never stored a NUL in text' },
  async (t) => {
    const storage = await testStore('hearth-migrate-nul-');
    t.after(() => storage.remove());
    const options = {
      dataDir: storage.dataDir,
      adminToken: 'admin-secret',
      secretKey: 'unit-test-secret-key-0123456789',
      publicUrl: 'http://127.0.0.1:9',
    };
    let app = await buildApp(options);
    let ids: { server: string; config: string; deployment: string; escaped: string };
    let agent: { authorization: string };
    try {
      const vm = await registerServer(app, 'vm-name');
      const config = await createConfig(app, { name: 'cfg-name' });
      const deployment = await createDeployment(app, config, vm.id, { name: 'dep-name', status_reason: 'why-reason' });
      // A name that holds the six characters `\u0000` (no NUL) is left as it is.
      const escaped = await createConfig(app, { name: 'kept\\u0000as-is' });
      ids = { server: vm.id, config, deployment, escaped };
      agent = vm.auth;
    } finally {
      await app.close();
    }

    // What the previous release left: the same schema (0006 changes nothing on SQLite), and operator
    // text with NULs, quoted into event messages too. Written past the store's guard, as it was then.
    const file = sqliteFile(storage.dataDir);
    const raw = new BetterSqlite(file);
    try {
      const withNul = (text: string) => text.replace('-', '\u0000');
      for (const [table, column] of [
        ['servers', 'name'],
        ['software_configs', 'name'],
        ['software_deployments', 'name'],
        ['software_deployments', 'status_reason'],
        ['events', 'message'],
      ] as const) {
        const rows = raw.prepare(`select rowid as row_id, "${column}" as value from "${table}"`).all() as Array<{
          row_id: number;
          value: string;
        }>;
        for (const row of rows) {
          const changed = row.value.replace(/(vm|cfg|dep|why)-(name|reason)/g, withNul);
          if (changed !== row.value) raw.prepare(`update "${table}" set "${column}" = ? where rowid = ?`).run(changed, row.row_id);
        }
      }
      raw.prepare(`delete from kysely_migration where name >= '0006'`).run();
      // Back to 0005: undo what the later migrations (not re-run by this test's point) added.
      raw.prepare('alter table alarms drop column repeat_actions').run();
      raw.prepare('alter table alarms drop column last_notified_at').run();
    } finally {
      raw.close();
    }
    assert.deepEqual(columnsWithNul(file), [
      'events.message',
      'servers.name',
      'software_configs.name',
      'software_deployments.name',
      'software_deployments.status_reason',
    ]);

    app = await buildApp(options);
    try {
      assert.deepEqual(columnsWithNul(file), [], 'no stored text holds a NUL after the upgrade');
      const server = await app.inject({ url: `/v1/default/servers/${ids.server}`, headers: ADMIN });
      assert.equal(server.json().server.name, 'vm\\u0000name', 'the NUL is kept as the text hearth writes for it today');
      const kept = await app.inject({ url: `/v1/default/software_configs/${ids.escaped}`, headers: ADMIN });
      assert.equal(kept.json().software_config.name, 'kept\\u0000as-is');
      const shown = await app.inject({ url: `/v1/default/software_deployments/${ids.deployment}`, headers: ADMIN });
      assert.equal(shown.json().software_deployment.name, 'dep\\u0000name');
      assert.equal(shown.json().software_deployment.status_reason, 'why\\u0000reason');
      const events = await app.inject({ url: '/v1/default/events', headers: ADMIN });
      assert.ok(
        events.json<{ events: Array<{ message: string }> }>().events.some((event) => event.message.includes('cfg\\u0000name')),
        events.body,
      );

      const heartbeat = await app.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${ids.deployment}/heartbeat`,
        headers: agent,
        payload: { message: 'alive' },
      });
      assert.equal(heartbeat.statusCode, 200, heartbeat.body);
      const updated = await app.inject({
        method: 'PUT',
        url: `/v1/default/software_deployments/${ids.deployment}`,
        headers: ADMIN,
        payload: { status: 'COMPLETE', status_reason: 'done by hand' },
      });
      assert.equal(updated.statusCode, 200, updated.body);
      for (const url of [`software_deployments/${ids.deployment}`, `servers/${ids.server}`, `software_configs/${ids.config}`]) {
        const deleted = await app.inject({ method: 'DELETE', url: `/v1/default/${url}`, headers: ADMIN });
        assert.equal(deleted.statusCode, 204, `DELETE ${url}: ${deleted.body}`);
      }
    } finally {
      await app.close();
    }
  },
);
