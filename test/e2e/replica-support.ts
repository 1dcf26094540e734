// What the PostgreSQL end-to-end tests share: hearth-server processes on one database URL (the
// replicas), JSON calls to them, and bounded waits. Each replica runs `packages/server/src/bin.ts
// serve --database-url URL` with the same admin token and master key, as replicas behind one load
// balancer would.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { childEnv, freePort, TEST_SECRET_KEY } from '../helpers/server.ts';

/** The admin token (X-Auth-Token) of every replica. */
export const ADMIN_TOKEN = 'test-admin-token';

/** How long a replica may take to answer /readyz (tsx compiles the server first; the machine may be loaded). */
const READY_TIMEOUT_MS = 60_000;
/** How long a stopping replica gets after SIGTERM before it is killed. */
const STOP_TIMEOUT_MS = 15_000;
/** How much of a replica's stderr is kept for failure reports. */
const LOG_TAIL_CHARS = 8_000;
/** Starts tried when the port picked turned out to be taken. */
const PORT_ATTEMPTS = 3;

/** A hearth-server process on the shared database. */
export interface Replica {
  /** A name for messages (A, B). */
  name: string;
  /** Its base URL on 127.0.0.1 (also its public URL). */
  url: string;
  child: ChildProcess;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** The last few KB of its stderr (pino JSON lines). */
  logTail(): string;
  /** SIGTERM, then SIGKILL if it has not exited within 15 s; removes its data dir. Resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Options of spawnReplica. */
export interface ReplicaOptions {
  /** Name for messages. */
  name: string;
  /** The postgres:// URL of the shared database. */
  databaseUrl: string;
  /** Extra environment (HEARTH_ALARM_SCHEDULE ...). */
  env?: Record<string, string>;
}

/** Spawns `hearth-server serve` on a free loopback port; resolves once it answers /readyz with 200. */
export async function spawnReplica(options: ReplicaOptions): Promise<Replica> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnOnce(options, await freePort());
    } catch (error) {
      if (attempt >= PORT_ATTEMPTS || !/EADDRINUSE/.test(String(error))) throw error;
    }
  }
}

async function spawnOnce(options: ReplicaOptions, port: number): Promise<Replica> {
  const url = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), `hearth-replica-${options.name}-`));
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'packages/server/src/bin.ts',
      'serve',
      '--listen',
      `127.0.0.1:${port}`,
      '--public-url',
      url,
      '--data-dir',
      dataDir,
      '--database-url',
      options.databaseUrl,
      '--log-level',
      'warn',
    ],
    {
      cwd: new URL('../..', import.meta.url).pathname,
      env: childEnv({ HEARTH_ADMIN_TOKEN: ADMIN_TOKEN, HEARTH_SECRET_KEY: TEST_SECRET_KEY, ...options.env }),
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let log = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => (log = (log + chunk).slice(-LOG_TAIL_CHARS)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const replica: Replica = {
    name: options.name,
    url,
    child,
    exited,
    logTail: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(killer);
      }
      rmSync(dataDir, { recursive: true, force: true });
      return child.exitCode;
    },
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      await replica.stop();
      throw new Error(`replica ${options.name} exited with ${child.exitCode} before it was ready:\n${log}`);
    }
    try {
      const response = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5_000) });
      if (response.ok) return replica;
    } catch {
      // not listening yet
    }
    await sleep(100);
  }
  await replica.stop();
  throw new Error(`replica ${options.name} did not answer /readyz within ${READY_TIMEOUT_MS / 1000} s:\n${log}`);
}

/** A JSON reply: status, headers and the parsed body (null when empty). */
export interface Reply<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
}

/** Options of one call: headers and a JSON body. */
export interface CallOptions {
  headers?: Record<string, string>;
  body?: unknown;
  /** Bound on the whole call (default 30 s). */
  timeoutMs?: number;
}

/** One HTTP call with a JSON body and a JSON (or empty) reply, bounded in time. */
export async function call<T = Record<string, unknown>>(method: string, url: string, options: CallOptions = {}): Promise<Reply<T>> {
  const headers = { ...options.headers, ...(options.body === undefined ? {} : { 'content-type': 'application/json' }) };
  const response = await fetch(url, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
  });
  const text = await response.text();
  let body: unknown = null;
  if (text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  return { status: response.status, headers: response.headers, body: body as T };
}

/** The operator's native API of one replica (`/v1/default`): `admin(replica)('POST', '/servers', {...})`. */
export function admin(replica: Replica) {
  return <T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<Reply<T>> =>
    call<T>(method, `${replica.url}/v1/default${path}`, { headers: { 'x-auth-token': ADMIN_TOKEN }, body });
}

/** The coded error of a reply (`error.code`), or undefined. */
export function errorCode(reply: Reply<unknown>): string | undefined {
  const body = reply.body as { error?: { code?: unknown } } | null;
  return typeof body?.error?.code === 'string' ? body.error.code : undefined;
}

/** Waits `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` every `everyMs` (default 100) until it returns a value other than undefined; fails after `timeoutMs`. */
export async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Runs one statement on a short-lived connection to `url`, bounded in time; returns the rows. */
export async function query<Row>(url: string, statement: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, query_timeout: 30_000 });
  client.on('error', () => undefined); // a lost connection also rejects the query: reported there
  await client.connect();
  try {
    return (await client.query(statement, values)).rows as Row[];
  } finally {
    await client.end();
  }
}

/** The name of the database in a postgres:// URL. */
export function databaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/** A replica's `hearth_feed_listeners` gauge (long-polls, streams and caches waiting on its feed). */
export async function feedListeners(replica: Replica): Promise<number> {
  const text = await (await fetch(`${replica.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const match = /^hearth_feed_listeners (\d+)$/m.exec(text);
  if (!match) throw new Error(`no hearth_feed_listeners in ${replica.name}'s /metrics`);
  return Number(match[1]);
}
