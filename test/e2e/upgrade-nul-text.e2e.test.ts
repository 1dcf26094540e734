// Upgrading a SQLite data dir from the release before the store refused NUL characters: that
// release stored them in operator text (server, config and deployment names, status reasons, alarm
// descriptions) and in the event messages quoting it. After the upgrade every old row can still be
// read, changed and deleted, by the operator and by the agent, over real HTTP to a real process.
// No second checkout: the old rows are written into the file directly, past today's guard, and the
// migrations after that release are unrecorded (on SQLite they left the schema as it was).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite from 'better-sqlite3';
import { freePort, removeServerData, spawnServer, type ServerProcess } from '../helpers/server.ts';
import { SQLITE_SIGNALS_BEFORE_0013 } from '../../packages/server/src/test-support.ts';

/** Where the old release's rows hold a NUL: written as this marker through today's API, then swapped. */
const MARK = 'NULHERE';

interface Reply {
  status: number;
  body: Record<string, unknown> & { error?: { message?: string } };
}

async function call(server: ServerProcess, method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(headers ?? { 'x-auth-token': server.token }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Reply['body']) : {} };
}

async function stop(server: ServerProcess): Promise<void> {
  server.child.kill('SIGTERM');
  await server.exited;
}

/** Puts a NUL where the marker is, in every text column, as the old release stored it; forgets the later migrations. */
function makeItTheOldRelease(file: string): string[] {
  const db = new BetterSqlite(file);
  const changed = new Set<string>();
  try {
    // The old release's signals table had rowids (0013 keys it by deployment and idempotency key).
    db.transaction(() => SQLITE_SIGNALS_BEFORE_0013.forEach((statement) => db.exec(statement)))();
    const tables = db.prepare(`select name from sqlite_master where type = 'table' and name not glob 'sqlite_*'`).pluck().all() as string[];
    for (const table of tables) {
      for (const column of db.prepare('select name from pragma_table_info(?)').pluck().all(table) as string[]) {
        const rows = db
          .prepare(
            `select rowid as row_id, "${column}" as value from "${table}" where typeof("${column}") = 'text' and instr("${column}", ?) > 0`,
          )
          .all(MARK) as Array<{ row_id: number; value: string }>;
        for (const row of rows) {
          db.prepare(`update "${table}" set "${column}" = ? where rowid = ?`).run(row.value.replaceAll(MARK, '\u0000'), row.row_id);
          changed.add(`${table}.${column}`);
        }
      }
    }
    db.prepare(`delete from kysely_migration where name >= '0006'`).run();
    // Back to 0005: undo what the later migrations (not this test's point) added, so they apply again.
    db.prepare('alter table alarms drop column repeat_actions').run();
    db.prepare('alter table alarms drop column last_notified_at').run();
  } finally {
    db.close();
  }
  return [...changed].sort();
}

test(
  'old rows with NULs in their text can be read, changed and deleted after the upgrade',
  { skip: process.env.HEARTH_TEST_STORE === 'postgres' && 'PostgreSQL never stored a NUL in text', timeout: 120_000 },
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'hearth-upgrade-'));
    const port = await freePort();
    let running: ServerProcess | undefined;
    t.after(async () => {
      if (running && running.child.exitCode === null) await stop(running);
      await removeServerData(dataDir);
    });

    running = await spawnServer(dataDir, port);
    const P = '/v1/default';
    assert.equal((await call(running, 'POST', `${P}/stacks`, { stack_name: 'app' })).status, 201);
    const created = await call(running, 'POST', `${P}/servers`, { name: `vm${MARK}1`, stack: 'app', resource_name: 'vm1' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const serverId = (created.body.server as { id: string }).id;
    const agent = { authorization: `Bearer ${(created.body.credential as { token: string }).token}` };
    const config = await call(running, 'POST', `${P}/software_configs`, { name: `cfg${MARK}1`, group: 'script', config: 'true' });
    const configId = (config.body.software_config as { id: string }).id;
    const deployment = await call(running, 'POST', `${P}/software_deployments`, {
      config_id: configId,
      server_id: serverId,
      name: `dep${MARK}1`,
      status_reason: `queued${MARK}by hand`,
      stack: 'app',
    });
    assert.equal(deployment.status, 200, JSON.stringify(deployment.body));
    const deploymentId = (deployment.body.software_deployment as { id: string }).id;
    const alarm = await call(running, 'POST', `${P}/alarms`, {
      name: 'cpu-high',
      description: `cpu${MARK}high`,
      metric_name: 'CPU',
      statistic: 'Average',
      period: 60,
      threshold: 90,
      comparison_operator: 'GreaterThanThreshold',
    });
    assert.equal(alarm.status, 201, JSON.stringify(alarm.body));
    await stop(running);

    assert.deepEqual(makeItTheOldRelease(join(dataDir, 'hearth.db')), [
      'alarms.description',
      'events.message',
      'servers.name',
      'software_configs.name',
      'software_deployments.name',
      'software_deployments.status_reason',
    ]);

    running = await spawnServer(dataDir, port);
    const shown = await call(running, 'GET', `${P}/servers/${serverId}`);
    assert.equal((shown.body.server as { name: string }).name, 'vm\\u00001', 'the NUL reads as the text hearth writes for it today');
    const events = await call(running, 'GET', `${P}/events`);
    const messages = (events.body.events as Array<{ message: string }>).map((event) => event.message);
    assert.ok(
      messages.some((message) => message.includes('cfg\\u00001')),
      messages.join('\n'),
    );
    assert.ok(!messages.some((message) => message.includes('\u0000')), 'no event message holds a NUL');

    // The agent goes on with its old deployment; the operator changes and removes everything.
    const heartbeat = await call(running, 'POST', `/v1/guest/deployments/${deploymentId}/heartbeat`, { message: 'alive' }, agent);
    assert.equal(heartbeat.status, 200, JSON.stringify(heartbeat.body));
    const updated = await call(running, 'PUT', `${P}/software_deployments/${deploymentId}`, {
      status: 'IN_PROGRESS',
      status_reason: 'again',
    });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    const signal = await call(running, 'POST', `/v1/guest/deployments/${deploymentId}/signal`, { deploy_status_code: 0 }, agent);
    assert.equal(signal.status, 200, JSON.stringify(signal.body));
    assert.equal(signal.body.status, 'COMPLETE');
    for (const path of [
      `software_deployments/${deploymentId}`,
      `servers/${serverId}`,
      `software_configs/${configId}`,
      'alarms/cpu-high',
      'stacks/app',
    ]) {
      const deleted = await call(running, 'DELETE', `${P}/${path}`);
      assert.equal(deleted.status, 204, `DELETE ${path}: ${deleted.status} ${deleted.body.error?.message ?? ''}`);
    }
  },
);
