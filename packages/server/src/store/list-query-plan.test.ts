// The plans of the operator lists and the timeline on a real store (SQLite, or PostgreSQL in that
// pass of the suite): the SQL the domain functions really run is captured and explained. A list
// page must seek an index in its sort order (no sort of all the project's or server's rows per
// page), an event type filter must not walk the project's other events, and a timeline must read
// its resource's events. A server's metadata reads its deployments' configs in a few queries, not
// one each. Also: a store migrated before 0012 upgrades to these indexes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledQuery, sql, type KyselyPlugin, type RootOperationNode } from 'kysely';
import { openStore, type Store } from './store.ts';
import { migrations } from './migrations.ts';
import { testStore } from '../test-support.ts';
import { ensureDefaultProject } from '../domain/projects.ts';
import { ConfigService } from '../domain/configs.ts';
import { DeploymentService } from '../domain/deployments.ts';
import { StackService } from '../domain/stacks.ts';
import { createLocalFeed } from '../feed/feed.ts';
import { SecretDeriver } from '../auth/secrets.ts';
import { listEvents, resourceTimeline } from '../domain/events.ts';
import { MetadataService } from '../domain/metadata.ts';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** Fills the store: one config, 30 deployments (on two servers, three to a millisecond), 3000 events (75 of a rare type). */
async function fill(store: Store): Promise<{ configId: string; deploymentId: string }> {
  const configId = '00000000-0000-4000-8000-000000000001';
  await store.write(async ({ trx }) => {
    await trx
      .insertInto('software_configs')
      .values({
        id: configId,
        project_id: 'default',
        name: 'c',
        group_name: 'script',
        config: '"true"',
        inputs: '[]',
        outputs: '[]',
        options: '{}',
        created_at: new Date(T0).toISOString(),
      })
      .execute();
    for (let i = 0; i < 30; i++) {
      const at = new Date(T0 + 1000 + Math.floor(i / 3)).toISOString();
      await trx
        .insertInto('software_deployments')
        .values({
          id: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
          project_id: 'default',
          server_id: i % 2 ? 'vm-a' : 'vm-b',
          config_id: configId,
          derived_config_id: `10000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          derived_at: at,
          name: null,
          action: 'CREATE',
          status: 'COMPLETE',
          status_reason: 'done',
          input_values: '{}',
          output_values: null,
          signal_transport: 'HEARTH_SIGNAL',
          timeout_s: 60,
          deadline_at: null,
          fetched_at: null,
          last_heartbeat_at: null,
          created_at: at,
          updated_at: null,
          stack_id: null,
          stack_name: null,
          resource_name: null,
          access_key_id: null,
        })
        .execute();
    }
    // Enough events that PostgreSQL's plans are those of a real table, not of a page or two.
    const events = Array.from({ length: 3000 }, (_, i) => ({
      project_id: 'default',
      time: new Date(T0 + 2000 + i).toISOString(),
      type: i % 40 ? 'deployment.heartbeat' : 'deployment.updated',
      resource_type: 'software_deployment',
      resource_id: `00000000-0000-7000-8000-${String(i % 300).padStart(12, '0')}`,
      server_id: 'vm-a',
      message: 'm',
      data: '{}',
    }));
    for (let i = 0; i < events.length; i += 500)
      await trx
        .insertInto('events')
        .values(events.slice(i, i + 500))
        .execute();
  });
  // PostgreSQL plans by its statistics, which autovacuum gathers on a live database.
  if (store.dialect === 'postgres') await sql`analyze`.execute(store.reader);
  return { configId, deploymentId: '00000000-0000-7000-8000-000000000000' };
}

/** The store with a reader that records every query it runs; `queries` compiles them, for explaining. */
function capturing(store: Store): { store: Store; readonly queries: CompiledQuery[] } {
  const nodes: RootOperationNode[] = [];
  const plugin: KyselyPlugin = {
    transformQuery: ({ node }) => {
      nodes.push(node);
      return node;
    },
    transformResult: ({ result }) => Promise.resolve(result),
  };
  // The lists and the timeline read through `reader` and look at `dialect` only.
  const recording: Store = { ...store, dialect: store.dialect, reader: store.reader.withPlugin(plugin) };
  return {
    store: recording,
    get queries() {
      return nodes.map((node) => store.reader.getExecutor().compileQuery(node, { queryId: 'plan' }));
    },
  };
}

/** The plan of a captured query, one line per step. On PostgreSQL, scans and sorts cost the most, so an index that fits is shown. */
async function plan(store: Store, query: CompiledQuery): Promise<string> {
  if (store.dialect === 'sqlite') {
    const rows = await store.reader.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]),
    );
    return rows.rows.map((row) => row.detail).join('\n');
  }
  return store.reader.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx);
    await sql`set local enable_sort = off`.execute(trx);
    await sql`set local enable_bitmapscan = off`.execute(trx);
    const rows = await trx.executeQuery<{ 'QUERY PLAN': string }>(CompiledQuery.raw(`explain ${query.sql}`, [...query.parameters]));
    return rows.rows.map((row) => row['QUERY PLAN']).join('\n');
  });
}

/** Asserts the plan of each captured query on `table` reads `index` in order: no sort, no scan of the table. */
async function assertPlans(store: Store, queries: CompiledQuery[], table: string, index: string): Promise<void> {
  const on = queries.filter((query) => query.sql.includes(`from "${table}"`));
  assert.ok(on.length > 0, `no query on ${table} was captured`);
  for (const query of on) {
    const text = await plan(store, query);
    const context = `${query.sql}\n${text}`;
    assert.match(text, new RegExp(`\\b${index}\\b`), context);
    assert.doesNotMatch(text, /TEMP B-TREE|SCAN events$|SCAN software_deployments$|Sort|Seq Scan/m, context);
  }
}

test('every page of a deployment list, of the project or of one server, seeks its index in sort order', async () => {
  const where = await testStore();
  const store = openStore({ dataDir: where.dataDir, databaseUrl: where.databaseUrl });
  try {
    await store.migrate();
    await ensureDefaultProject(store);
    const { deploymentId } = await fill(store);
    for (const serverId of [undefined, 'vm-a']) {
      const capture = capturing(store);
      const deployments = new DeploymentService(
        capture.store,
        new ConfigService(capture.store),
        createLocalFeed(),
        new StackService(capture.store, 'http://127.0.0.1:9'),
        new SecretDeriver('unit-test-secret-key-0123456789'),
      );
      await deployments.list('default', serverId);
      await deployments.list('default', serverId, 5);
      await deployments.list('default', serverId, 5, deploymentId);
      const queries = capture.queries.filter((query) => !query.sql.startsWith('select "created_at", "id"'));
      await assertPlans(store, queries, 'software_deployments', serverId ? 'deployments_server_created' : 'deployments_project_created');
      // The marker bounds the index range itself, not a filter on every row before it.
      const afterMarker = await plan(store, queries.at(-1)!);
      if (store.dialect === 'sqlite') assert.match(afterMarker, /\(created_at,id\)>\(\?,\?\)/, afterMarker);
      else assert.match(afterMarker, /Index Cond: .*ROW\(\(created_at\)::text, \(id\)::text\) > ROW/, afterMarker);
    }
  } finally {
    await store.close();
    await where.remove();
  }
});

test('a config page after a marker seeks the configs index to the marker', async () => {
  const where = await testStore();
  const store = openStore({ dataDir: where.dataDir, databaseUrl: where.databaseUrl });
  try {
    await store.migrate();
    await ensureDefaultProject(store);
    const { configId } = await fill(store);
    const capture = capturing(store);
    await new ConfigService(capture.store).list('default', 5, configId);
    const page = capture.queries.filter((query) => query.sql.includes('order by'));
    assert.equal(page.length, 1);
    const text = await plan(store, page[0]!);
    assert.match(text, /configs_project/, text);
    // The marker bounds the index range itself (SQLite shows it in the search), not a filter on every newer row.
    if (store.dialect === 'sqlite') assert.match(text, /\(created_at,id\)<\(\?,\?\)/, text);
    else assert.match(text, /Index Cond: .*ROW\(\(created_at\)::text, \(id\)::text\) < ROW/, text);
  } finally {
    await store.close();
    await where.remove();
  }
});

test('a timeline reads its own resource’s events by index, and so does an events page of one resource', async () => {
  const where = await testStore();
  const store = openStore({ dataDir: where.dataDir, databaseUrl: where.databaseUrl });
  try {
    await store.migrate();
    await ensureDefaultProject(store);
    const { deploymentId } = await fill(store);
    const timeline = capturing(store);
    // Its resource has 5 heartbeats and 5 other events, under both of the timeline's bounds.
    await resourceTimeline(timeline.store, 'default', deploymentId, 'deployment.heartbeat');
    await assertPlans(store, timeline.queries, 'events', 'events_resource');

    const byResource = capturing(store);
    await listEvents(byResource.store, 'default', { resource_id: deploymentId, type: 'deployment.heartbeat', limit: 10 });
    const resourcePage = byResource.queries.filter((query) => query.sql.startsWith('select * from "events"'));
    await assertPlans(store, resourcePage, 'events', 'events_resource');
  } finally {
    await store.close();
    await where.remove();
  }
});

test('a store migrated before 0012 upgrades: the list indexes are made, the narrower server index goes, rows stay', async () => {
  const where = await testStore();
  const before = (dialect: Parameters<typeof migrations>[0]) => {
    const all = migrations(dialect);
    for (const name of Object.keys(all)) if (name >= '0012') delete all[name];
    return all;
  };
  let store = openStore({ dataDir: where.dataDir, databaseUrl: where.databaseUrl, migrations: before });
  try {
    await store.migrate();
    await ensureDefaultProject(store);
    await fill(store);
    await store.close();
    store = openStore({ dataDir: where.dataDir, databaseUrl: where.databaseUrl });
    assert.equal((await store.migrate())[0], '0012_list_order_indexes');
    const indexes =
      store.dialect === 'sqlite'
        ? await sql<{ name: string }>`select name from sqlite_master where type = 'index'`.execute(store.reader)
        : await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema()`.execute(store.reader);
    const names = new Set(indexes.rows.map((row) => row.name));
    for (const name of ['deployments_project_created', 'deployments_server_created']) assert.ok(names.has(name), name);
    assert.ok(!names.has('deployments_server'));
    const count = await store.reader
      .selectFrom('software_deployments')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(count.n), 30);
  } finally {
    await store.close();
    await where.remove();
  }
});

test('a metadata build reads the configs of a server’s 1200 deployments in a few queries, each cached once', async () => {
  const where = await testStore();
  const store = openStore({ dataDir: where.dataDir, databaseUrl: where.databaseUrl });
  try {
    await store.migrate();
    await ensureDefaultProject(store);
    const { configId } = await fill(store);
    const ids = Array.from({ length: 700 }, (_, i) => `20000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    await store.write(async ({ trx }) => {
      const configs = ids.map((id) => ({
        id,
        project_id: 'default',
        name: null,
        group_name: 'script',
        config: '"true"',
        inputs: '[]',
        outputs: '[]',
        options: '{}',
        created_at: new Date(T0).toISOString(),
      }));
      for (let i = 0; i < configs.length; i += 200)
        await trx
          .insertInto('software_configs')
          .values(configs.slice(i, i + 200))
          .execute();
      // 1200 deployments of srv-big: the 700 configs, some of them twice.
      const deployments = Array.from({ length: 1200 }, (_, i) => ({
        id: `30000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
        project_id: 'default',
        server_id: 'srv-big',
        config_id: ids[i % ids.length]!,
        derived_config_id: `40000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
        derived_at: new Date(T0).toISOString(),
        name: null,
        action: 'CREATE',
        status: 'COMPLETE',
        status_reason: 'done',
        input_values: '{}',
        output_values: null,
        signal_transport: 'NO_SIGNAL',
        timeout_s: 60,
        deadline_at: null,
        fetched_at: null,
        last_heartbeat_at: null,
        created_at: new Date(T0).toISOString(),
        updated_at: null,
        stack_id: null,
        stack_name: null,
        resource_name: null,
        access_key_id: null,
      }));
      for (let i = 0; i < deployments.length; i += 100)
        await trx
          .insertInto('software_deployments')
          .values(deployments.slice(i, i + 100))
          .execute();
    });
    const capture = capturing(store);
    const configs = new ConfigService(capture.store);
    const metadata = new MetadataService(
      capture.store,
      configs,
      createLocalFeed(),
      () => null,
      () => Promise.resolve({}),
    );
    const { derived } = await metadata.derivedConfigs('default', 'srv-big');
    assert.equal(derived.length, 1200);
    assert.deepEqual(new Set(derived.map((entry) => entry.id)).size, 1200);
    const configReads = capture.queries.filter((query) => query.sql.includes('from "software_configs"'));
    // One read of 500 ids and one of the other 200, not one per deployment.
    assert.equal(configReads.length, 2, configReads.map((query) => query.sql.slice(0, 80)).join('\n'));

    // Each config is counted once in the cache's budget (its stored text), however many gets of it overlapped.
    const perConfig = '"true"[][]{}'.length;
    assert.equal(configs.cachedCharacters, perConfig * ids.length);

    // Overlapping gets still tell apart a config of another project, one that does not exist, and one that does.
    const fresh = new ConfigService(store);
    const answers = await Promise.allSettled([
      fresh.get('other', configId),
      fresh.get('default', '00000000-0000-4000-8000-00000000ffff'),
      fresh.get('default', configId),
    ]);
    assert.deepEqual(
      answers.map((answer) => (answer.status === 'fulfilled' ? answer.value.id : (answer.reason as { code: string }).code)),
      ['ERR_CONFIG_NOT_FOUND', 'ERR_CONFIG_NOT_FOUND', configId],
    );
  } finally {
    await store.close();
    await where.remove();
  }
});
