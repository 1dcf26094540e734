import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { buildApp } from '../../packages/server/src/app.ts';

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
  /** Stops the server and removes the data dir. */
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

/** Starts hearth-server in this process on 127.0.0.1 (a free port) with a fresh data dir. */
export async function startServer(options: { dataDir?: string } = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'hearth-test-'));
  const token = 'test-admin-token';
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const app = await buildApp({ dataDir, adminToken: token, secretKey: TEST_SECRET_KEY, publicUrl: url });
  await app.listen({ host: '127.0.0.1', port });
  return {
    url,
    token,
    dataDir,
    async close() {
      await app.close();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
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

/** Starts `hearth-server serve` as a process on a given port; resolves once it answers /readyz. */
export async function spawnServer(dataDir: string, port: number, token = 'test-admin-token'): Promise<ServerProcess> {
  const url = `http://127.0.0.1:${port}`;
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
      '--log-level',
      'warn',
    ],
    {
      cwd: new URL('../..', import.meta.url).pathname,
      env: childEnv({ HEARTH_ADMIN_TOKEN: token, HEARTH_SECRET_KEY: TEST_SECRET_KEY }),
      stdio: ['ignore', 'ignore', 'inherit'],
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
