// Upgrading a SQLite data dir that a real older hearth-server wrote: test/fixtures/upgrade-0004 holds
// the hearth.db (as SQL text, hearth.sql) of the release before migration 0005 (and before the store refused NULs) and what
// that release's API answered (make.mjs there rebuilds both from a checkout of it). Today's server
// starts on a copy: every row reads as it did, and the agents carry on with what the old one gave them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import BetterSqlite from 'better-sqlite3';
import { migrations } from '../../packages/server/src/store/migrations.ts';
import { freePort, removeServerData, spawnServer, type ServerProcess } from '../helpers/server.ts';
import { loadSql } from '../helpers/sqlite-sql.ts';

const FIXTURE = new URL('../fixtures/upgrade-0004/', import.meta.url).pathname;
/** Fields that move by themselves while a server runs: the actuator outbox's retry, the alarm evaluator, events appended. */
const MOVING = new Set(['next_attempt', 'last_evaluated_at', 'next_cursor']);

/** A URL without its signature: one signed for another host has another (both are valid). */
function unsigned(text: string): string {
  return text.replace(/([?&](?:Signature|temp_url_sig|token)=)[^&]*/g, '$1');
}

interface Expected {
  url: string;
  made: {
    servers: Record<string, { server: { id: string }; credential: { token: string } }>;
    deployments: Record<string, { id: string }>;
    wait_conditions: Record<string, { handle: { cfn_url: string } }>;
    policy: { alarm_url: string };
  };
  metadata: Record<
    string,
    { etag: string; body: { deployments: Array<{ name: string; inputs: Array<{ name: string; value: unknown }> }> } }
  >;
  reads: Record<string, unknown>;
}

/** Where an old value and today's differ; today may add fields, a NUL reads as `\u0000`, URLs carry today's host. */
function differences(before: unknown, after: unknown, oldUrl: string, newUrl: string, path = ''): string[] {
  if (typeof before === 'string' && typeof after === 'string') {
    const fixed = unsigned(before.replaceAll(oldUrl, newUrl));
    return after === before || unsigned(after) === fixed || after === fixed.replaceAll('\u0000', '\\u0000')
      ? []
      : [`${path}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`];
  }
  if (Array.isArray(before)) {
    if (!Array.isArray(after) || after.length < before.length) return [`${path}: ${before.length} items -> ${JSON.stringify(after)}`];
    return before.flatMap((item, i) => differences(item, after[i], oldUrl, newUrl, `${path}[${i}]`));
  }
  if (before !== null && typeof before === 'object') {
    if (after === null || typeof after !== 'object') return [`${path}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`];
    return Object.entries(before).flatMap(([key, value]) =>
      MOVING.has(key) ? [] : differences(value, (after as Record<string, unknown>)[key], oldUrl, newUrl, `${path}.${key}`),
    );
  }
  return isDeepStrictEqual(before, after) ? [] : [`${path}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`];
}

interface Reply {
  status: number;
  etag: string | undefined;
  body: Record<string, unknown>;
}

/** One request to the server, with the Host header given (the old release signed its URLs for its own). */
function send(server: ServerProcess, method: string, target: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const url = new URL(target, server.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}${url.pathname}${url.search}`,
      { method, headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          let parsed: Record<string, unknown>;
          try {
            parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
          } catch {
            parsed = { text };
          }
          resolve({ status: res.statusCode ?? 0, etag: res.headers.etag, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

test(
  'a data dir of the release before 0005 upgrades: rows read the same, old credentials and URLs still work, deadlines fire',
  { skip: process.env.HEARTH_TEST_STORE === 'postgres' && 'the fixture is a SQLite file', timeout: 120_000 },
  async (t) => {
    // The deadline moved below (`deadline` is shown at whole seconds) reads as moved.
    const moved = new Date(Math.floor(Date.now() / 1000) * 1000 + 10 * 3600_000);
    const expected = JSON.parse(
      readFileSync(join(FIXTURE, 'expected.json'), 'utf8').replaceAll('"2026-11-27T18:09:44Z"', `"${moved.toISOString().slice(0, 19)}Z"`),
    ) as Expected;
    const oldHost = new URL(expected.url).host;
    const dataDir = mkdtempSync(join(tmpdir(), 'hearth-upgrade-0004-'));
    loadSql(readFileSync(join(FIXTURE, 'hearth.sql'), 'utf8'), join(dataDir, 'hearth.db'));
    // The fixture's deadlines count from when it was made (wc-partial's 36000 s passed at 18:09 on the day it
    // was): a run any later must still find the wait condition meant to stay open, open. Only wc-deadline's is
    // meant to pass while no server runs (the restart grace then holds it, as it holds deployments').
    const fixtureDb = new BetterSqlite(join(dataDir, 'hearth.db'));
    try {
      fixtureDb
        .prepare("update wait_conditions set deadline_at = ? where status = 'IN_PROGRESS' and name <> 'wc-deadline'")
        .run(moved.toISOString());
    } finally {
      fixtureDb.close();
    }
    chmodSync(join(dataDir, 'hearth.db'), 0o600);
    const server = await spawnServer(dataDir, await freePort());
    t.after(async () => {
      if (server.child.exitCode === null) {
        server.child.kill('SIGTERM');
        await server.exited;
      }
      await removeServerData(dataDir);
    });
    const operator = { 'x-auth-token': server.token };
    const { made } = expected;
    const agent = (vm: string) => ({ authorization: `Bearer ${made.servers[vm]!.credential.token}` });

    // Every read the old release answered reads the same (shapes may have gained fields).
    for (const [path, before] of Object.entries(expected.reads)) {
      if (path.endsWith('/wc-deadline')) continue; // its deadline passed while no server ran: below
      const reply = await send(server, 'GET', path, undefined, operator);
      assert.equal(reply.status, 200, `GET ${path}: ${JSON.stringify(reply.body)}`);
      assert.deepEqual(differences(before, reply.body, expected.url, server.url), [], `GET ${path}`);
    }

    // The agent's old credential reads its metadata; its old ETag gets either 304 or today's document.
    const metadata = await send(server, 'GET', '/v1/guest/metadata', undefined, agent('vm1'));
    assert.equal(metadata.status, 200, JSON.stringify(metadata.body));
    assert.deepEqual(differences(expected.metadata.vm1!.body, metadata.body, expected.url, server.url), []);
    const conditional = await send(server, 'GET', '/v1/guest/metadata', undefined, {
      ...agent('vm1'),
      'if-none-match': expected.metadata.vm1!.etag,
    });
    assert.ok([200, 304].includes(conditional.status), `${conditional.status}`);
    if (conditional.status === 304) assert.equal(metadata.etag, expected.metadata.vm1!.etag, 'a 304 only for the same document');

    // The IN_PROGRESS deployment goes on: the agent's signal completes it, and a repeated old signal is a duplicate.
    const d = made.deployments;
    const signalled = await send(
      server,
      'POST',
      `/v1/guest/deployments/${d['d-inprog']!.id}/signal`,
      { deploy_stdout: 'after', deploy_status_code: 0 },
      agent('vm1'),
    );
    assert.equal(signalled.status, 200, JSON.stringify(signalled.body));
    assert.equal(signalled.body.status, 'COMPLETE');
    const repeated = await send(
      server,
      'POST',
      `/v1/guest/deployments/${d['d-complete']!.id}/signal`,
      { deploy_stdout: 'out', deploy_stderr: 'err', deploy_status_code: 0, result: 'r1' },
      agent('vm1'),
    );
    assert.equal(repeated.status, 200, JSON.stringify(repeated.body));
    assert.equal(repeated.body.duplicate, true);

    // URLs the old release signed (for its own host) still work: a deployment's CFN signal, a
    // wait-condition handle, a scaling policy's alarm_url.
    const cfnSignalUrl = expected.metadata.vm2!.body.deployments[0]!.inputs.find((input) => input.name === 'deploy_signal_id')!
      .value as string;
    const cfn = await send(server, 'POST', cfnSignalUrl, { deploy_status_code: 0 }, { host: oldHost });
    assert.equal(cfn.status, 200, JSON.stringify(cfn.body));
    const handle = await send(
      server,
      'PUT',
      made.wait_conditions['wc-partial']!.handle.cfn_url,
      { Status: 'SUCCESS', Reason: 'two', UniqueId: 'b', Data: 'y' },
      { host: oldHost },
    );
    assert.equal(handle.status, 200, JSON.stringify(handle.body));
    const alarm = await send(server, 'POST', made.policy.alarm_url, {}, { host: oldHost });
    assert.ok(alarm.status >= 200 && alarm.status < 300, `${alarm.status} ${JSON.stringify(alarm.body)}`);
    const states = await send(server, 'GET', '/v1/default/software_deployments', undefined, operator);
    const byName = Object.fromEntries(
      (states.body.software_deployments as Array<{ name: string; status: string }>).map((deployment) => [
        deployment.name,
        deployment.status,
      ]),
    );
    assert.deepEqual(byName, { 'd-complete': 'COMPLETE', 'd-failed': 'FAILED', 'd-inprog': 'COMPLETE', 'd-cfn': 'COMPLETE' });
    const partial = await send(server, 'GET', '/v1/default/stacks/app/wait_conditions/wc-partial', undefined, operator);
    assert.equal((partial.body.wait_condition as { status: string }).status, 'COMPLETE');

    // The wait condition whose deadline passed while no server ran is held for the restart grace (6 min): a
    // signal its VMs queued meanwhile may still come. Sweeps run every half second: 2 s is several.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const held = await send(server, 'GET', '/v1/default/stacks/app/wait_conditions/wc-deadline', undefined, operator);
    assert.equal((held.body.wait_condition as { status: string }).status, 'IN_PROGRESS');

    // Every migration of today is recorded, and the old release's own signal insert (it names
    // signals.body) still fits the table, for a server of it still running on the same database.
    server.child.kill('SIGTERM');
    await server.exited;
    const db = new BetterSqlite(join(dataDir, 'hearth.db'));
    try {
      assert.deepEqual(db.prepare('select name from kysely_migration order by name').pluck().all(), Object.keys(migrations('sqlite')));
      const oldInsert = db.prepare(
        'insert into signals (deployment_id, derived_config_id, idempotency_key, body, result_status, result_reason, received_at) values (?, ?, ?, ?, ?, ?, ?)',
      );
      oldInsert.run(d['d-failed']!.id, 'derived', 'client:old-release', '{}', 'FAILED', 'by the old release', new Date().toISOString());
    } finally {
      db.close();
    }
  },
);
