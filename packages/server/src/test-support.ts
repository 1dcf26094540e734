import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp, type AppOptions } from './app.ts';
import type { DialectName } from './store/migrations.ts';
import type { Store } from './store/store.ts';
import { postgresTestPass, testDatabaseUrl } from './store/test-database.ts';
import { guardedLookup, type SocketLookup } from './domain/link-local.ts';
import type { LookupAddress } from 'node:dns';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AlarmNotification } from '@hearth/protocol';

/** Admin token of the apps built by `testApp`. */
export const ADMIN = { 'x-auth-token': 'admin-secret' };

/**
 * SQLite statements that put `signals` back as hearth kept it before migration 0013: a rowid table
 * with an AUTOINCREMENT id beside a unique index on its key, rows copied. For tests that rebuild what an
 * older release left (run them in one transaction).
 */
export const SQLITE_SIGNALS_BEFORE_0013 = [
  `create table signals_rowid (
    id integer primary key autoincrement,
    deployment_id varchar(36) not null,
    derived_config_id varchar(36) not null,
    idempotency_key varchar(128) not null,
    result_status varchar(16) not null,
    result_reason text,
    received_at varchar(32) not null,
    body text,
    constraint signals_idempotency unique (deployment_id, idempotency_key)
  )`,
  `insert into signals_rowid (deployment_id, derived_config_id, idempotency_key, result_status, result_reason, received_at, body)
    select deployment_id, derived_config_id, idempotency_key, result_status, result_reason, received_at, body from signals`,
  'drop table signals',
  'alter table signals_rowid rename to signals',
];

/** The store this run of the suite tests: PostgreSQL when HEARTH_TEST_STORE=postgres, else SQLite. */
export const TEST_DIALECT: DialectName = postgresTestPass() ? 'postgres' : 'sqlite';

/** Where a test keeps its data: a fresh data dir and, in the PostgreSQL pass, a fresh database. */
export interface TestStore {
  /** The data dir (SQLite file, generated secrets). */
  dataDir: string;
  /** The database for buildApp's `databaseUrl`; undefined means SQLite in the data dir. */
  databaseUrl: string | undefined;
  /** Removes the data dir and drops the database. */
  remove(): Promise<void>;
}

/** A fresh data dir (`prefix` names it in tmpdir, default hearth-unit-) and, in the PostgreSQL pass, a fresh database. */
export async function testStore(prefix = 'hearth-unit-'): Promise<TestStore> {
  const database = await testDatabaseUrl();
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dataDir,
    databaseUrl: database?.url,
    async remove() {
      rmSync(dataDir, { recursive: true, force: true });
      await database?.drop();
    },
  };
}

/** An app on `storage` (testStore's), with the test admin token, secret key and public URL; `options` add to them. */
export function appOn(storage: Pick<TestStore, 'dataDir' | 'databaseUrl'>, options: Partial<AppOptions> = {}): Promise<FastifyInstance> {
  return buildApp({
    dataDir: storage.dataDir,
    databaseUrl: storage.databaseUrl,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
    ...options,
  });
}

/** A fresh app on a fresh store (see testStore), closed and removed by `done`. */
export async function testApp(
  options: Pick<AppOptions, 'logger' | 'restartGraceMs'> & {
    /**
     * false: the background tasks that write (alarm evaluator, actuator deliverer, deadline sweeper, events retention) are
     * stopped before the app is handed over, so `beforeWrite` sees the test's requests only: the
     * alarm evaluator's lease write every 10 s took the interloper's turn now and then under load.
     */
    background?: false;
  } = {},
): Promise<{ app: FastifyInstance; dataDir: string; done: () => Promise<void> }> {
  const store = await testStore();
  const { background, ...appOptions } = options;
  try {
    // Tests write deadlines already past; the grace for those of a restart is tested on its own.
    const app = await appOn(store, { restartGraceMs: 0, ...appOptions });
    if (background === false) {
      // (The wait-condition sweeper writes only for a condition past its deadline: none in such tests.)
      const { alarmEvaluator, actuatorDeliverer, deadlines, eventsRetention } = app.services;
      await Promise.all([alarmEvaluator.stop(), actuatorDeliverer.stop(), deadlines.stop(), eventsRetention.stop()]);
    }
    return {
      app,
      dataDir: store.dataDir,
      async done() {
        try {
          await app.close();
        } finally {
          await store.remove();
        }
      },
    };
  } catch (error) {
    await store.remove();
    throw error;
  }
}

/** Registers a server; returns its id and the agent's auth header. */
export async function registerServer(
  app: FastifyInstance,
  name = 'vm',
): Promise<{ id: string; auth: { authorization: string }; token: string }> {
  const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name } });
  if (reply.statusCode !== 201) throw new Error(`register failed: ${reply.body}`);
  const body = reply.json<{ server: { id: string }; credential: { token: string } }>();
  return { id: body.server.id, auth: { authorization: `Bearer ${body.credential.token}` }, token: body.credential.token };
}

/** Creates a script config with one output and one error output; returns its id. */
export async function createConfig(app: FastifyInstance, extra: Record<string, unknown> = {}): Promise<string> {
  const reply = await app.inject({
    method: 'POST',
    url: '/v1/default/software_configs',
    headers: ADMIN,
    payload: {
      name: 'cfg',
      group: 'script',
      config: '#!/bin/sh\necho hi',
      outputs: [{ name: 'result' }, { name: 'oops', error_output: true }],
      ...extra,
    },
  });
  if (reply.statusCode !== 200) throw new Error(`config failed: ${reply.body}`);
  return reply.json<{ software_config: { id: string } }>().software_config.id;
}

/** Creates a deployment; returns its id. */
export async function createDeployment(
  app: FastifyInstance,
  configId: string,
  serverId: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const reply = await app.inject({
    method: 'POST',
    url: '/v1/default/software_deployments',
    headers: ADMIN,
    payload: { config_id: configId, server_id: serverId, ...extra },
  });
  if (reply.statusCode !== 200) throw new Error(`deployment failed: ${reply.body}`);
  return reply.json<{ software_deployment: { id: string } }>().software_deployment.id;
}

/** The coded error of a reply. */
export function errorCode(reply: LightMyRequestResponse): string {
  return reply.json<{ error: { code: string } }>().error.code;
}

/** Sends a request to an absolute URL the server handed out, with its Host header. */
export function injectUrl(
  app: FastifyInstance,
  method: 'GET' | 'PUT' | 'POST' | 'HEAD',
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
) {
  const parsed = new URL(url);
  return app.inject({
    method,
    url: parsed.pathname + parsed.search,
    headers: { host: parsed.host, ...headers },
    ...(payload === undefined ? {} : { payload: typeof payload === 'string' ? payload : JSON.stringify(payload) }),
  });
}

/** Creates stack `web` with wait condition `ready` (count 1); returns its pre-signed CFN handle URL. */
export async function waitConditionHandle(app: FastifyInstance): Promise<URL> {
  const stack = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  if (stack.statusCode !== 201) throw new Error(`stack failed: ${stack.body}`);
  const created = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/web/wait_conditions',
    headers: ADMIN,
    payload: { name: 'ready', count: 1, timeout: 600 },
  });
  if (created.statusCode !== 201) throw new Error(`wait condition failed: ${created.body}`);
  return new URL(created.json<{ wait_condition: { handle: { cfn_url: string } } }>().wait_condition.handle.cfn_url);
}

/**
 * Lets a competing request win a write race deterministically: `interloper` runs once, just before
 * the `skip + 1`-th next unit of `store` is queued, so it commits first.
 */
export function beforeWrite(
  store: Store,
  interloper: () => Promise<LightMyRequestResponse>,
  skip = 0,
): { reply: () => LightMyRequestResponse } {
  const write = store.write.bind(store);
  let reply: LightMyRequestResponse | undefined;
  let seen = 0;
  store.write = async (unit) => {
    if (seen++ < skip) return write(unit);
    store.write = write;
    reply = await interloper();
    return write(unit);
  };
  return {
    reply: () => {
      assert.ok(reply, 'the interloper did not run');
      return reply;
    },
  };
}

/**
 * A guarded socket lookup over a hosts-style table instead of DNS (nothing is sent to a resolver):
 * `rebound.test` lists 127.0.0.1 first and then the metadata address, so that without the guard a
 * request would land on a loopback receiver of the test, never on the metadata address.
 */
export function hostsLookup(): SocketLookup {
  const hosts: Record<string, string[]> = { 'hook.test': ['127.0.0.1'], 'rebound.test': ['127.0.0.1', '169.254.169.254'] };
  return guardedLookup((hostname, _options, callback) =>
    callback(
      null,
      (hosts[hostname] ?? []).map((address): LookupAddress => ({ address, family: 4 })),
    ),
  );
}

/** An Alertmanager webhook body (version 4) for one alert, as a scaling policy's alarm URL receives it. */
export function alertmanagerBody(status: 'firing' | 'resolved' = 'firing') {
  return {
    version: '4',
    status,
    receiver: 'hearth',
    groupLabels: { alertname: 'HighLoad' },
    commonLabels: { alertname: 'HighLoad' },
    commonAnnotations: {},
    alerts: [{ status, labels: { alertname: 'HighLoad' }, annotations: {} }],
  };
}

/** A loopback alarm-action receiver that answers `status.code` (200 unless changed) and records every body it accepts. */
export async function alarmReceiver(): Promise<{ url: string; bodies: AlarmNotification[]; status: { code: number }; server: Server }> {
  const bodies: AlarmNotification[] = [];
  const status = { code: 200 };
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      if (status.code < 300) bodies.push(JSON.parse(text) as AlarmNotification);
      response.writeHead(status.code).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, bodies, status, server };
}

/** The value of one Prometheus series (name and labels, as the text writes them) in the app's /metrics text; 0 when absent. */
export async function metricValue(app: FastifyInstance, series: string): Promise<number> {
  const line = (await app.inject({ url: '/metrics' })).body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

/** Waits until `check` holds, at most 5 s (then fails saying `what`): e.g. a response is counted once it has finished, just after the client has it. */
export async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const until = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`not within 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
