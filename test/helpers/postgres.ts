// A throwaway PostgreSQL cluster for tests and scripts: initdb into a temp dir, pg_ctl start on a
// loopback port (as the postgres user when we are root: initdb refuses root), stop and remove.
import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './server.ts';

/** Where Debian installs each PostgreSQL version (`<version>/bin`). */
const DEBIAN_ROOT = '/usr/lib/postgresql';
/** Bound on initdb and on each pg_ctl call (pg_ctl itself waits at most 30 s). */
const COMMAND_TIMEOUT_MS = 60_000;
/** Starts tried on fresh ports when the port was ours to pick and another process took it meanwhile. */
const PORT_ATTEMPTS = 3;
/** Server settings of a test cluster: fast and not crash-safe (no fsync), room for many test apps' pools. */
const TEST_SETTINGS: Readonly<Record<string, string>> = {
  fsync: 'off',
  synchronous_commit: 'off',
  full_page_writes: 'off',
  max_connections: '300',
};

const asRoot = process.getuid?.() === 0;

/** A running throwaway cluster. Everything it has is under `dir` (data, log, socket). */
export interface PostgresCluster {
  /** Superuser URL of the `postgres` database: postgres://postgres@127.0.0.1:PORT/postgres (trust auth). */
  url: string;
  /** The loopback port it listens on. */
  port: number;
  /** Its temp dir: `data/`, `log`, and the Unix socket. */
  dir: string;
  /** The PostgreSQL bin dir it runs from. */
  bin: string;
  /** Stops it (pg_ctl stop -m fast) and removes `dir`. Safe to call when it is already stopped. */
  stop(): Promise<void>;
  /** Stops it (-m fast) and starts it again on the same port with the same data. */
  restart(): Promise<void>;
  /** Stops it hard (-m immediate, as a crash would) and keeps the data. */
  kill(): Promise<void>;
  /** Starts it again (after `kill`) on the same port with the same data. */
  start(): Promise<void>;
}

/** What identifies a cluster on disk; enough to get a handle to one another process started. */
export interface PostgresClusterState {
  /** The cluster's temp dir. */
  dir: string;
  /** Its loopback port. */
  port: number;
  /** The PostgreSQL bin dir. */
  bin: string;
  /** Server settings over the test defaults (fsync, synchronous_commit, full_page_writes off; max_connections 300). */
  settings?: Readonly<Record<string, string>>;
}

/** The dir holding initdb and pg_ctl: the newest /usr/lib/postgresql/<version>/bin, else the first on PATH. */
export function postgresBinDir(): string | undefined {
  const versions = existsSync(DEBIAN_ROOT) ? readdirSync(DEBIAN_ROOT) : [];
  const debian = versions
    .filter((version) => hasTools(join(DEBIAN_ROOT, version, 'bin')))
    .sort(compareVersions)
    .map((version) => join(DEBIAN_ROOT, version, 'bin'));
  const onPath = (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '' && hasTools(dir));
  return debian.at(-1) ?? onPath[0];
}

/** Why a cluster cannot be started here (PostgreSQL not installed, no postgres user for root), or undefined if it can. */
export function postgresUnavailable(): string | undefined {
  if (!postgresBinDir()) {
    return `PostgreSQL is not installed: no initdb and pg_ctl under ${DEBIAN_ROOT}/*/bin or on PATH (apt-get install -y postgresql)`;
  }
  if (asRoot && postgresUser() === undefined) {
    return 'running as root, and there is no postgres user to run initdb and pg_ctl as (initdb refuses root)';
  }
  return undefined;
}

/**
 * The `skip` option of a test that needs a cluster: false when one can be started, else the reason.
 * In CI (env CI=true) a missing PostgreSQL throws, so the test fails instead of skipping.
 */
export function skipUnlessPostgres(): false | string {
  const reason = postgresUnavailable();
  if (!reason) return false;
  if (process.env.CI === 'true') throw new Error(`${reason} (CI=true: a missing PostgreSQL is a failure)`);
  return reason;
}

/**
 * initdb into a fresh temp dir and start it on 127.0.0.1 (`port`, default a free one; `settings` over
 * the test defaults, e.g. `{ fsync: 'on' }`); rejects with the server log's tail if it does not start.
 */
export async function startPostgres(
  options: { port?: number; settings?: Readonly<Record<string, string>> } = {},
): Promise<PostgresCluster> {
  const reason = postgresUnavailable();
  if (reason) throw new Error(reason);
  for (const [name, value] of Object.entries(options.settings ?? {})) {
    if (!/^[a-z_.]+$/i.test(name) || !/^[\w.:/-]+$/.test(value)) {
      throw new Error(`PostgreSQL setting ${name}=${value}: use a plain name and a value without spaces or quotes`);
    }
  }
  const bin = postgresBinDir()!;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-pg-'));
  try {
    if (asRoot) {
      const user = postgresUser()!;
      chownSync(dir, user.uid, user.gid);
    }
    chmodSync(dir, 0o700);
    const init = await pgTool(
      bin,
      'initdb',
      ['-D', join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
      dir,
    );
    if (init.code !== 0) throw new Error(`initdb failed (${describeExit(init)}):\n${init.output.trim()}`);
    for (let attempt = 1; ; attempt++) {
      const cluster = postgresCluster({ dir, port: options.port ?? (await freePort()), bin, settings: options.settings });
      try {
        await cluster.start();
        return cluster;
      } catch (error) {
        const portTaken = /could not bind|Address already in use/i.test(String(error));
        if (options.port !== undefined || !portTaken || attempt >= PORT_ATTEMPTS) throw error;
      }
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** A handle to a cluster in `state.dir` (started by startPostgres, maybe in another process). */
export function postgresCluster(state: PostgresClusterState): PostgresCluster {
  const { dir, port, bin } = state;
  const settings = { ...TEST_SETTINGS, ...state.settings };
  const data = join(dir, 'data');
  const log = join(dir, 'log');
  const ctl = (args: string[]) => pgTool(bin, 'pg_ctl', ['-D', data, ...args], dir);
  const stopWith = async (mode: 'fast' | 'immediate') => {
    const result = await ctl(['stop', '-m', mode, '-w', '-t', '30']);
    if (result.code === 0 || !existsSync(join(data, 'postmaster.pid'))) return;
    throw new Error(`pg_ctl stop -m ${mode} failed for ${data} (${describeExit(result)}):\n${result.output.trim()}`);
  };
  const start = async () => {
    const serverOptions = [
      '-c listen_addresses=127.0.0.1',
      `-p ${port}`,
      `-k ${dir}`,
      ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`),
    ].join(' ');
    const result = await ctl(['-l', log, '-w', '-t', '30', '-o', serverOptions, 'start']);
    if (result.code === 0) return;
    await ctl(['stop', '-m', 'immediate', '-w', '-t', '30']); // a server still starting must not outlive the failure
    throw new Error(
      `PostgreSQL did not start on 127.0.0.1:${port} (pg_ctl start: ${describeExit(result)}):\n${result.output.trim()}\n` +
        `--- ${log} (last 30 lines) ---\n${logTail(log, 30)}`,
    );
  };
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    bin,
    start,
    kill: () => stopWith('immediate'),
    async restart() {
      await stopWith('fast');
      await start();
    },
    async stop() {
      if (!existsSync(dir)) return;
      try {
        await stopWith('fast');
      } catch {
        await stopWith('immediate');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface ToolResult {
  command: string;
  code: number | null;
  signal: string | null;
  timedOut: boolean;
  output: string;
}

/** Runs a PostgreSQL tool (as the postgres user when we are root), bounded; the outcome is data, failures included. */
function pgTool(bin: string, tool: string, args: string[], cwd: string): Promise<ToolResult> {
  const path = join(bin, tool);
  const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', path, ...args]] : [path, args];
  const command = [file, ...argv].join(' ');
  return new Promise((resolve) => {
    const child = execFile(
      file,
      argv,
      { cwd, timeout: COMMAND_TIMEOUT_MS, killSignal: 'SIGKILL', maxBuffer: 16 * 1024 * 1024, env: { ...process.env, LC_ALL: 'C' } },
      (error, stdout, stderr) => {
        const output = `${stdout}${stderr}`;
        if (!error) return resolve({ command, code: 0, signal: null, timedOut: false, output });
        const code = typeof error.code === 'number' ? error.code : null;
        const timedOut = error.killed === true && error.signal === 'SIGKILL';
        resolve({ command, code, signal: error.signal ?? null, timedOut, output: output || error.message });
      },
    );
    child.stdin?.end();
  });
}

function describeExit(result: ToolResult): string {
  if (result.timedOut) return `${result.command}: timed out after ${COMMAND_TIMEOUT_MS / 1000} s`;
  return `${result.command}: exit ${result.code ?? result.signal}`;
}

function logTail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch (error) {
    return `(no log: ${(error as Error).message})`;
  }
}

function hasTools(dir: string): boolean {
  return existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'));
}

/** Numeric order of version dir names: 9.6 < 10 < 15. */
function compareVersions(a: string, b: string): number {
  const [x, y] = [a.split('.').map(Number), b.split('.').map(Number)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const diff = (x[i] ?? 0) - (y[i] ?? 0);
    if (diff !== 0 && !Number.isNaN(diff)) return diff;
  }
  return a.localeCompare(b);
}

let user: { uid: number; gid: number } | null | undefined;

/** The postgres user's uid and gid, or undefined if there is no such user. */
function postgresUser(): { uid: number; gid: number } | undefined {
  if (user === undefined) {
    try {
      const id = (flag: string) =>
        Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
      user = { uid: id('-u'), gid: id('-g') };
    } catch {
      user = null;
    }
  }
  return user ?? undefined;
}
