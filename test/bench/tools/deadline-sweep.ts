// Diagnostic (not run by `npm run bench`): what a mass expiry of deployment deadlines does to the
// rest of hearth-server. It starts hearth-server (this file in `serve` mode: buildApp, no logger,
// with an event-loop delay histogram), registers agent servers, inserts <due> IN_PROGRESS
// deployments whose deadlines all fall in the same millisecond (a third never fetched, a third
// fetched, a third heartbeating) and <live> ones with an hour left, then, while the deadline
// watcher sweeps, polls /healthz every 10 ms and signals a live deployment every 50 ms. It prints
// the sweep's duration (first to last `deployment.timed_out` event), the server's event-loop
// delay, the probes' latencies and statuses, and checks every reason and that each due deployment
// has exactly one timed_out event.
// With --restart the server is stopped before the deadlines are set a minute in the past, and the
// probes start when it is listening again (a restart after an outage longer than the timeouts).
// With --wait-conditions N, N wait conditions (one signal expected, none sent) fall due at the
// same time, and the wait-condition sweeper's duration is printed too.
// With --database-url the server is a PostgreSQL replica (give it a fresh, empty database).
// Usage: tsx test/bench/tools/deadline-sweep.ts <due> [--live N] [--wait-conditions N] [--restart] [--database-url postgres://...]
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { buildApp } from '../../../packages/server/src/app.ts';
import { openStore } from '../../../packages/server/src/store/store.ts';
import type { NewEvent } from '../../../packages/server/src/store/schema.ts';
import { ADMIN_TOKEN, SECRET_KEY, SIGNAL_BODY } from '../fixtures.ts';

/** The due deployments' timeout: how the checks tell them from the live ones. */
const DUE_TIMEOUT_S = 77;
const AGENT_SERVERS = 50;
/** Upper bound on one sweep before the tool gives up. */
const SWEEP_LIMIT_MS = 600_000;

/** The server: hearth's app on 127.0.0.1; `stats` on stdin prints (and resets) the event-loop delay. */
async function serve(port: number, dataDir: string, databaseUrl: string | undefined): Promise<void> {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const app = await buildApp({
    dataDir,
    databaseUrl,
    adminToken: ADMIN_TOKEN,
    secretKey: SECRET_KEY,
    publicUrl: `http://127.0.0.1:${port}`,
  });
  await app.listen({ host: '127.0.0.1', port });
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  const lifetime = setTimeout(() => process.exit(2), 30 * 60_000).unref();
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    if (line !== 'stats') return;
    const ms = (ns: number) => Math.round(ns / 1e5) / 10;
    process.stdout.write(
      `${JSON.stringify({ stats: { max: ms(delay.max), p99: ms(delay.percentile(99)), p50: ms(delay.percentile(50)), mean: ms(delay.mean) } })}\n`,
    );
    delay.reset();
  });
  lines.on('close', () => {
    clearTimeout(lifetime);
    void app.close().then(() => process.exit(0));
  });
}

interface Running {
  child: ChildProcess;
  url: string;
  /** The next JSON line the server prints. */
  next(): Promise<Record<string, unknown>>;
}

async function orchestrate(): Promise<void> {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      live: { type: 'string', default: '200' },
      'wait-conditions': { type: 'string', default: '0' },
      restart: { type: 'boolean', default: false },
      'database-url': { type: 'string' },
    },
  });
  const due = Number(positionals[0]);
  const live = Number(values.live);
  const waitConditions = Number(values['wait-conditions']);
  const databaseUrl = values['database-url'];
  if (!due) throw new Error('usage: deadline-sweep.ts <due> [--live N] [--wait-conditions N] [--restart] [--database-url postgres://...]');
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-deadline-sweep-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  let server: Running | undefined = await start(port, dataDir, databaseUrl);
  const store = openStore({ dataDir, databaseUrl });
  try {
    const agents: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < AGENT_SERVERS; i++) {
      const created = await call<{ server: { id: string }; credential: { token: string } }>(agent, 'POST', `${url}/v1/default/servers`, {
        token: ADMIN_TOKEN,
        body: { name: `sweep-${i}` },
      });
      agents.push({ id: created.server.id, token: created.credential.token });
    }
    const config = await call<{ software_config: { id: string } }>(agent, 'POST', `${url}/v1/default/software_configs`, {
      token: ADMIN_TOKEN,
      body: { name: 'sweep', group: 'script', config: 'true' },
    });
    // Half the agents have called: the never-fetched reasons name both cases.
    const seen = new Date(Date.now() - 3_600_000).toISOString();
    await store.write(({ trx }) =>
      trx
        .updateTable('servers')
        .set({ last_seen_at: seen })
        .where(
          'id',
          'in',
          agents.filter((_, i) => i % 2 === 0).map((a) => a.id),
        )
        .execute(),
    );
    const started = performance.now();
    const liveIds = await insert(store, agents, config.software_config.id, due, live);
    if (waitConditions > 0) {
      const stack = await call<{ stack: { id: string } }>(agent, 'POST', `${url}/v1/default/stacks`, {
        token: ADMIN_TOKEN,
        body: { stack_name: 'sweep' },
      });
      await insertWaitConditions(store, stack.stack.id, waitConditions);
    }
    console.log(
      `inserted ${due} due + ${live} live deployments and ${waitConditions} due wait conditions in ${Math.round(performance.now() - started)} ms`,
    );

    let deadline: number;
    if (values.restart) {
      server.child.stdin!.end();
      await new Promise((resolve) => server!.child.once('exit', resolve));
      server = undefined;
      deadline = Date.now() - 60_000;
      await setDeadlines(store, deadline);
      const restarting = performance.now();
      server = await start(port, dataDir, databaseUrl);
      console.log(`restarted: listening after ${Math.round(performance.now() - restarting)} ms`);
    } else {
      deadline = Date.now() + 3000;
      await setDeadlines(store, deadline);
      // A deployment made through the API tells the watcher that deadlines moved (the rows above did not).
      await call(agent, 'POST', `${url}/v1/default/software_deployments`, {
        token: ADMIN_TOKEN,
        body: { config_id: config.software_config.id, server_id: agents[0]!.id, action: 'CREATE' },
      });
      await sleep(deadline - Date.now() - 1000);
    }
    server.child.stdin!.write('stats\n');
    await server.next();

    const probing = { done: false };
    const health = probe(probing, 10, async () => {
      const began = performance.now();
      const status = await request(agent, 'GET', `${url}/healthz`, {}).then(
        (reply) => reply.status,
        () => 0,
      );
      return { status, ms: performance.now() - began };
    });
    const signalAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    let nextLive = 0;
    const signals = probe(probing, 50, async () => {
      const target = liveIds[nextLive++];
      if (!target) return undefined;
      const began = performance.now();
      const status = await request(signalAgent, 'POST', `${url}/v1/guest/deployments/${target.id}/signal`, {
        token: target.token,
        bearer: true,
        raw: SIGNAL_BODY,
      }).then(
        (reply) => reply.status,
        () => 0,
      );
      return { status, ms: performance.now() - began };
    });
    const waitStarted = Date.now();
    for (;;) {
      let left = 0;
      for (const table of ['software_deployments', 'wait_conditions'] as const) {
        const count = await store.reader
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('status', '=', 'IN_PROGRESS')
          .where('timeout_s', '=', DUE_TIMEOUT_S)
          .executeTakeFirstOrThrow();
        left += Number(count.n);
      }
      if (left === 0) break;
      if (Date.now() - waitStarted > SWEEP_LIMIT_MS) throw new Error(`${left} due rows still IN_PROGRESS after ${SWEEP_LIMIT_MS} ms`);
      await sleep(200);
    }
    await sleep(500);
    probing.done = true;
    const [healthResults, signalResults] = await Promise.all([health, signals]);
    server.child.stdin!.write('stats\n');
    const loop = (await server.next()).stats as Record<string, number>;
    signalAgent.destroy();

    const eventTimes = (type: string) =>
      store.reader
        .selectFrom('events')
        .select((eb) => [eb.fn.min('time').as('first'), eb.fn.max('time').as('last'), eb.fn.countAll<number>().as('n')])
        .where('type', '=', type)
        .executeTakeFirstOrThrow();
    const times = await eventTimes('deployment.timed_out');
    const doubled = await store.reader
      .selectFrom('events')
      .select('resource_id')
      .where('type', '=', 'deployment.timed_out')
      .groupBy('resource_id')
      .having((eb) => eb.fn.countAll(), '>', 1)
      .execute();
    const wrong = await wrongReasons(store, due);
    const relative = (iso: unknown) => (typeof iso === 'string' ? `${Date.parse(iso) - deadline} ms` : 'never');
    console.log(
      `sweep of ${due}: first timed_out event at deadline + ${relative(times.first)}, last at + ${relative(times.last)};` +
        ` ${times.n} events, ${doubled.length} deployments with more than one, ${wrong} wrong reasons`,
    );
    if (waitConditions > 0) {
      const failed = await eventTimes('wait_condition.failed');
      console.log(
        `sweep of ${waitConditions} wait conditions: first failed event at deadline + ${relative(failed.first)}, last at + ${relative(failed.last)};` +
          ` ${failed.n} events`,
      );
    }
    console.log(`server event-loop delay during the sweep (ms): ${JSON.stringify(loop)}`);
    console.log(`/healthz every 10 ms: ${summary(healthResults)}`);
    console.log(`signals to live deployments every 50 ms: ${summary(signalResults)}`);
  } finally {
    await store.close();
    if (server) {
      server.child.stdin!.end();
      await new Promise((resolve) => server!.child.once('exit', resolve));
    }
    agent.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Inserts the due and live deployments (each with its created event, as the API writes them); returns the live ones. */
async function insert(
  store: ReturnType<typeof openStore>,
  agents: Array<{ id: string; token: string }>,
  configId: string,
  due: number,
  live: number,
): Promise<Array<{ id: string; token: string }>> {
  const liveIds: Array<{ id: string; token: string }> = [];
  const hourAhead = new Date(Date.now() + 3_600_000).toISOString();
  const earlier = new Date(Date.now() - 600_000).toISOString();
  for (let from = 0; from < due + live; from += 500) {
    await store.write(async ({ trx, now, event }) => {
      const rows = [];
      for (let i = from; i < Math.min(from + 500, due + live); i++) {
        const isDue = i < due;
        const owner = agents[i % agents.length]!;
        const id = randomUUID();
        if (!isDue) liveIds.push({ id, token: owner.token });
        // Rows cycle through the three reasons: never fetched, fetched, heartbeating.
        const kind = i % 3;
        rows.push({
          id,
          project_id: 'default',
          server_id: owner.id,
          config_id: configId,
          derived_config_id: randomUUID(),
          derived_at: now,
          name: null,
          action: 'CREATE',
          status: 'IN_PROGRESS',
          status_reason: 'Deploy data available',
          input_values: '{}',
          output_values: null,
          signal_transport: 'HEARTH_SIGNAL',
          timeout_s: isDue ? DUE_TIMEOUT_S : 3600,
          deadline_at: hourAhead,
          fetched_at: isDue && kind === 0 ? null : earlier,
          last_heartbeat_at: isDue && kind === 2 ? earlier : null,
          created_at: now,
          updated_at: null,
          stack_id: null,
          stack_name: null,
          resource_name: null,
          access_key_id: null,
        });
        const created: Omit<NewEvent, 'time'> = {
          project_id: 'default',
          type: 'deployment.created',
          resource_type: 'software_deployment',
          resource_id: id,
          server_id: owner.id,
          message: `Deployment created: CREATE sweep on server ${owner.id}`,
          data: JSON.stringify({ action: 'CREATE', status: 'IN_PROGRESS', config_id: configId, timeout: DUE_TIMEOUT_S }),
        };
        event(created);
      }
      await trx.insertInto('software_deployments').values(rows).execute();
    });
  }
  return liveIds;
}

/** Inserts `count` IN_PROGRESS wait conditions (one signal expected, none received) in a stack. */
async function insertWaitConditions(store: ReturnType<typeof openStore>, stackId: string, count: number): Promise<void> {
  const hourAhead = new Date(Date.now() + 3_600_000).toISOString();
  for (let from = 0; from < count; from += 500) {
    await store.write(async ({ trx, now }) => {
      const rows = [];
      for (let i = from; i < Math.min(from + 500, count); i++) {
        rows.push({
          id: randomUUID(),
          project_id: 'default',
          stack_id: stackId,
          name: `wait-${i}`,
          count: 1,
          timeout_s: DUE_TIMEOUT_S,
          max_failures: null,
          min_success_percent: null,
          status: 'IN_PROGRESS',
          status_reason: null,
          deadline_at: hourAhead,
          access_key_id: `SWEEP${randomUUID().replaceAll('-', '').slice(0, 15).toUpperCase()}`,
          urls_expire_at: null,
          generation: 1,
          created_at: now,
          updated_at: null,
        });
      }
      await trx.insertInto('wait_conditions').values(rows).execute();
    });
  }
}

/** Every due deployment and wait condition gets the same deadline, in one statement each. */
async function setDeadlines(store: ReturnType<typeof openStore>, at: number): Promise<void> {
  const deadline = new Date(at).toISOString();
  await store.write(async ({ trx }) => {
    for (const table of ['software_deployments', 'wait_conditions'] as const) {
      await trx
        .updateTable(table)
        .set({ deadline_at: deadline })
        .where('status', '=', 'IN_PROGRESS')
        .where('timeout_s', '=', DUE_TIMEOUT_S)
        .execute();
    }
  });
}

/** Due deployments that are not FAILED with the reason their kind calls for. */
async function wrongReasons(store: ReturnType<typeof openStore>, due: number): Promise<number> {
  const rows = await store.reader
    .selectFrom('software_deployments')
    .select(['status', 'status_reason', 'fetched_at', 'last_heartbeat_at'])
    .where('timeout_s', '=', DUE_TIMEOUT_S)
    .execute();
  let wrong = Math.abs(rows.length - due);
  for (const row of rows) {
    const expected = !row.fetched_at
      ? /never fetched this deployment \(its agent (was last seen at|has never called)/
      : !row.last_heartbeat_at
        ? /fetched the deployment at .* but never signalled a result/
        : /stopped heartbeating; the last heartbeat was at/;
    if (
      row.status !== 'FAILED' ||
      !row.status_reason?.startsWith(`Timed out after ${DUE_TIMEOUT_S} s`) ||
      !expected.test(row.status_reason)
    ) {
      wrong++;
    }
  }
  return wrong;
}

/** Runs `once` every `everyMs` (one at a time) until `state.done` or it returns undefined. */
async function probe(
  state: { done: boolean },
  everyMs: number,
  once: () => Promise<{ status: number; ms: number } | undefined>,
): Promise<Array<{ status: number; ms: number }>> {
  const results: Array<{ status: number; ms: number }> = [];
  while (!state.done) {
    const began = performance.now();
    const result = await once();
    if (!result) break;
    results.push(result);
    await sleep(everyMs - (performance.now() - began));
  }
  return results;
}

function summary(results: Array<{ status: number; ms: number }>): string {
  const ms = results.map((r) => r.ms).sort((a, b) => a - b);
  const statuses: Record<number, number> = {};
  for (const r of results) statuses[r.status] = (statuses[r.status] ?? 0) + 1;
  const at = (q: number) => (ms.length ? ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(0) : '-');
  return (
    `${results.length} requests, statuses ${JSON.stringify(statuses)}, latency p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, ` +
    `max ${at(1)} ms, over 200 ms: ${ms.filter((m) => m > 200).length}`
  );
}

async function start(port: number, dataDir: string, databaseUrl: string | undefined): Promise<Running> {
  const args = ['--import', 'tsx', new URL(import.meta.url).pathname, 'serve', String(port), dataDir];
  if (databaseUrl) args.push(databaseUrl);
  const env = { ...process.env };
  delete env.NODE_EXTRA_CA_CERTS;
  const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const waiting: Array<(line: Record<string, unknown>) => void> = [];
  lines.on('line', (line) => waiting.shift()?.(JSON.parse(line) as Record<string, unknown>));
  const next = () =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the server did not answer within 120 s')), 120_000);
      waiting.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  await next();
  return { child, url: `http://127.0.0.1:${port}`, next };
}

interface Reply {
  status: number;
  text: string;
}

function request(
  agent: Agent,
  method: string,
  url: string,
  options: { token?: string; bearer?: boolean; body?: unknown; raw?: string },
): Promise<Reply> {
  const payload = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const headers: Record<string, string | number> = {};
  if (options.token) {
    if (options.bearer) headers.authorization = `Bearer ${options.token}`;
    else headers['x-auth-token'] = options.token;
  }
  if (payload !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) });
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, agent, headers, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

async function call<T>(agent: Agent, method: string, url: string, options: { token: string; body: unknown }): Promise<T> {
  const reply = await request(agent, method, url, options);
  if (reply.status >= 300) throw new Error(`${method} ${url}: ${reply.status} ${reply.text.slice(0, 300)}`);
  return JSON.parse(reply.text) as T;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const probeServer = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probeServer.address() as { port: number };
      probeServer.close(() => resolve(port));
    });
  });

if (process.argv[2] === 'serve') await serve(Number(process.argv[3]), process.argv[4]!, process.argv[5]);
else await orchestrate();
