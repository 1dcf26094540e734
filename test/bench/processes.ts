// The benchmark's child processes: server processes (`node --import tsx servers/<file>`) and wrk
// runs, all remembered so that every way out of the run can kill them.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ADMIN_TOKEN, SECRET_KEY } from './fixtures.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const SERVERS_DIR = new URL('servers/', import.meta.url).pathname;
/** How long a server may take to print its ready line. */
const START_TIMEOUT_MS = 60_000;

const children: ChildProcess[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Environment for child processes: no NODE_EXTRA_CA_CERTS (it costs ~44 ms and 2 MB per node start). */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/** Spawns a child that killChildren will kill. */
export function spawnTracked(file: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(file, args, options);
  children.push(child);
  return child;
}

/** SIGKILLs every child still running (servers, wrk). */
export function killChildren(): void {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null && child.pid) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/** A free TCP port on 127.0.0.1 (the OS picks it; the tiny race until the server binds is accepted). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** A running benchmark server. */
export interface ServerProc {
  name: string;
  port: number;
  url: string;
  child: ChildProcess;
  pid: number;
  /** Profiles the server wrote (BENCH_CPU_PROF=1). */
  profiles: string[];
}

/** How a server is started: its lifetime cap, where it writes CPU profiles (unset: no profiler), extra environment. */
export interface ServerOptions {
  maxLifetimeMs: number;
  profileDir?: string;
  env?: Record<string, string>;
  /** Another checkout to run the server file of (tools that compare builds); default this one. */
  root?: string;
}

/** Spawns `node --import tsx servers/<file> <port> <args>` on a free port and waits for its ready line. */
export async function startServer(name: string, file: string, args: string[], options: ServerOptions): Promise<ServerProc> {
  const port = await freePort();
  const profiles: string[] = [];
  const serversDir = options.root ? join(options.root, 'test/bench/servers') : SERVERS_DIR;
  const child = spawnTracked(process.execPath, ['--import', 'tsx', join(serversDir, file), String(port), ...args], {
    cwd: options.root ?? ROOT,
    env: childEnv({
      BENCH_ADMIN_TOKEN: ADMIN_TOKEN,
      BENCH_SECRET_KEY: SECRET_KEY,
      BENCH_MAX_LIFETIME_MS: String(options.maxLifetimeMs),
      ...(options.profileDir ? { BENCH_PROFILE_DIR: options.profileDir, BENCH_PROFILE_NAME: name } : {}),
      ...options.env,
    }),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before it was ready`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line.includes('"ready":true')) {
        clearTimeout(timer);
        resolve();
      } else if (line.startsWith('{"profile":')) {
        profiles.push((JSON.parse(line) as { profile: string }).profile);
      }
    });
  });
  return { name, port, url: `http://127.0.0.1:${port}`, child, pid: child.pid!, profiles };
}

/** Starts (`on`) or stops and writes (`off`) a server's CPU profile; waits for the file when stopping. */
export async function toggleProfile(server: ServerProc, on: boolean): Promise<void> {
  const before = server.profiles.length;
  server.child.kill('SIGUSR2');
  if (on) {
    await sleep(200);
    return;
  }
  const until = Date.now() + 15_000;
  while (server.profiles.length === before && Date.now() < until) await sleep(100);
}

/** Stops a server: closes its stdin and sends SIGTERM; SIGKILL after 10 s. */
export async function stopServer(server: ServerProc): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()));
  server.child.stdin?.end();
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
