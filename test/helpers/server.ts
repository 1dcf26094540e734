import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { request, type Agent } from 'node:http';
import { buildApp } from '../../packages/server/src/app.ts';
import { testDatabaseUrl, type TestDatabase } from '../../packages/server/src/store/test-database.ts';

/** The master key every test server uses. */
export const TEST_SECRET_KEY = 'test-secret-key-0123456789abcdef';

/** A running hearth-server for a test. */
export interface TestServer {
  /** Base URL on 127.0.0.1. */
  url: string;
  /** The admin token (X-Auth-Token). */
  token: string;
  /** Its fresh data dir (removed by close). */
  dataDir: string;
  /** Stops the server, removes the data dir (unless the caller gave it) and drops its database (PostgreSQL pass). */
  close(): Promise<void>;
}

/** A free TCP port on 127.0.0.1 (the OS picks it; a tiny race is acceptable in tests). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/**
 * Starts hearth-server in this process on 127.0.0.1 (a free port) with a fresh data dir, and in the
 * PostgreSQL pass (HEARTH_TEST_STORE=postgres) a fresh database.
 */
export async function startServer(options: { dataDir?: string } = {}): Promise<TestServer> {
  const database = await testDatabaseUrl();
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'hearth-test-'));
  const remove = async () => {
    if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  };
  const token = 'test-admin-token';
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  try {
    const app = await buildApp({ dataDir, databaseUrl: database?.url, adminToken: token, secretKey: TEST_SECRET_KEY, publicUrl: url });
    try {
      await app.listen({ host: '127.0.0.1', port });
    } catch (error) {
      await app.close();
      throw error;
    }
    return {
      url,
      token,
      dataDir,
      async close() {
        try {
          await app.close();
        } finally {
          await remove();
        }
      },
    };
  } catch (error) {
    await remove();
    throw error;
  }
}

/**
 * The database of the servers spawned on one data dir, in the PostgreSQL pass: a server spawned
 * again on the same data dir (a restart) finds the same data. removeServerData drops it.
 */
const spawnedDatabases = new Map<string, Promise<TestDatabase | undefined>>();

function databaseOf(dataDir: string): Promise<TestDatabase | undefined> {
  let database = spawnedDatabases.get(dataDir);
  if (!database) {
    database = testDatabaseUrl();
    spawnedDatabases.set(dataDir, database);
    database.catch(() => spawnedDatabases.delete(dataDir));
  }
  return database;
}

/** Removes the data dir of spawned servers and, in the PostgreSQL pass, drops their database. Stop the servers first. */
export async function removeServerData(dataDir: string): Promise<void> {
  rmSync(dataDir, { recursive: true, force: true });
  const database = spawnedDatabases.get(dataDir);
  spawnedDatabases.delete(dataDir);
  await (await database?.catch(() => undefined))?.drop();
}

/** A hearth-server running as its own process (for crash tests), started with `tsx`. */
export interface ServerProcess {
  url: string;
  token: string;
  child: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
}

/** Environment for child processes: no NODE_EXTRA_CA_CERTS (it costs ~44 ms per node start). */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/**
 * Starts `hearth-server serve` as a process on a given port; resolves once it answers /readyz. In the
 * PostgreSQL pass every server spawned on one data dir shares one database; removeServerData drops it.
 * Its log goes to this process's stderr at `warn`, unless `log` says otherwise (an fd: the caller's file).
 */
export async function spawnServer(
  dataDir: string,
  port: number,
  token = 'test-admin-token',
  log: { level?: 'warn' | 'info' | 'debug'; stderr?: 'inherit' | number } = {},
): Promise<ServerProcess> {
  const url = `http://127.0.0.1:${port}`;
  const database = await databaseOf(dataDir);
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'packages/server/src/bin.ts',
      'serve',
      '--listen',
      `127.0.0.1:${port}`,
      '--data-dir',
      dataDir,
      ...(database ? ['--database-url', database.url] : []),
      '--log-level',
      log.level ?? 'warn',
    ],
    {
      cwd: new URL('../..', import.meta.url).pathname,
      env: childEnv({ HEARTH_ADMIN_TOKEN: token, HEARTH_SECRET_KEY: TEST_SECRET_KEY }),
      stdio: ['ignore', 'ignore', log.stderr ?? 'inherit'],
    },
  );
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`hearth-server exited with ${child.exitCode} before it was ready`);
    try {
      const response = await fetch(`${url}/readyz`);
      if (response.ok) return { url, token, child, exited };
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('hearth-server did not become ready within 30 s');
}

/** POSTs JSON over `agent`; resolves with the status, or 0 when the connection failed or was cut before the reply. */
export function postJson(agent: Agent, url: string, headers: Record<string, string>, body: unknown): Promise<number> {
  return new Promise((resolve) => {
    const data = JSON.stringify(body);
    const req = request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', () => resolve(0));
      },
    );
    req.on('error', () => resolve(0));
    req.end(data);
  });
}

/** An operator call to a spawned server with its admin token: the parsed JSON reply (undefined when empty); throws on a non-2xx. */
export async function operatorCall<T>(
  server: Pick<ServerProcess, 'url' | 'token'>,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers: { 'x-auth-token': server.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** A server's `hearth_feed_listeners` gauge: the long-polls, streams and caches waiting on its feed. */
export async function feedListeners(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
  const match = /^hearth_feed_listeners (\d+)$/m.exec(text);
  if (!match) throw new Error(`no hearth_feed_listeners in ${url}/metrics`);
  return Number(match[1]);
}

/**
 * Starts a long-poll or event stream (`start`) and resolves once the server holds it: it waits on
 * the feed. A sleep instead would be too short on a loaded machine, and what a stop must answer is a
 * held request, not one still on its way. Wrapped: `start`'s promise settles only when the request ends.
 */
export async function whenHeld<T>(url: string, start: () => T, timeoutMs = 30_000): Promise<{ request: T }> {
  const before = await feedListeners(url);
  const request = start();
  const deadline = Date.now() + timeoutMs;
  while ((await feedListeners(url)) <= before) {
    if (Date.now() > deadline) throw new Error(`no request held on ${url}'s feed within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { request };
}
