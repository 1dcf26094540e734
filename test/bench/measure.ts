// Measuring one run: the idle check, wrk (Debian's, one process per server, all started at once)
// with a Lua script that counts every status, and CPU of the servers, the database, wrk and the
// rest of the machine from /proc.
import { cpus } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { childEnv, spawnTracked, type ServerProc } from './processes.ts';
import type { PgCounters } from './postgres.ts';

const LUA_DIR = new URL('lua/', import.meta.url).pathname;
/** wrk threads per process: one (a second thread takes CPU from the server it measures). */
export const THREADS = 1;
const CLK_TCK = 100;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// CPU accounting (/proc)

export function systemJiffies(): { total: number; idle: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { total, idle: (fields[3] ?? 0) + (fields[4] ?? 0) };
}

/** utime + stime of a process, in jiffies (0 once it is gone). */
export function processJiffies(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** % of all CPUs idle over `ms`. */
export async function idlePercent(ms = 1000): Promise<number> {
  const a = systemJiffies();
  await sleep(ms);
  const b = systemJiffies();
  return b.total === a.total ? 100 : (100 * (b.idle - a.idle)) / (b.total - a.total);
}

/** performance.md's idle check: sample 1 s; wait (up to `maxWaitS`) until `targetPct` % idle. */
export async function waitForIdle(targetPct: number, maxWaitS: number): Promise<{ idle: number; waitedS: number }> {
  let idle = await idlePercent();
  let waited = 1;
  while (idle < targetPct && waited < maxWaitS) {
    idle = await idlePercent();
    waited++;
  }
  return { idle: Math.round(idle), waitedS: waited };
}

/** VmRSS of a process in MiB. */
export function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

// ---------------------------------------------------------------------------------------------
// wrk

export interface WrkOut {
  requests: number;
  duration_us: number;
  bytes: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: { p50: number; p90: number; p99: number; max: number; mean: number };
  statuses: Record<string, number>;
  ids_used: number;
  ids_exhausted: number;
}

/** One wrk process against one server. */
export interface Load {
  server: ServerProc;
  script: 'meta.lua' | 'signal.lua';
  url: string;
  headers: string[];
  scriptArgs: string[];
  connections: number;
}

/** Runs one wrk; `sh` reaps it and prints its own /proc stat, whose cutime + cstime are wrk's CPU. */
function spawnWrk(load: Load, seconds: number): Promise<{ out: WrkOut; wrkJiffies: number }> {
  const wrkArgs = [`-t${THREADS}`, `-c${load.connections}`, `-d${seconds}s`, '--timeout', '5s', '-s', join(LUA_DIR, load.script)];
  for (const h of load.headers) wrkArgs.push('-H', h);
  wrkArgs.push(load.url);
  if (load.scriptArgs.length > 0) wrkArgs.push('--', ...load.scriptArgs);
  const shell = 'wrk "$@"; rc=$?; echo "SHSTAT $(cat /proc/$$/stat)"; exit $rc';
  return new Promise((resolve, reject) => {
    const child = spawnTracked('sh', ['-c', shell, 'sh', ...wrkArgs], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.on('exit', (code) => {
      clearTimeout(guard);
      const json = /BENCH_JSON (\{.*\})/.exec(stdout);
      const shstat = /SHSTAT (.*)/.exec(stdout);
      if (code !== 0 || !json) {
        reject(new Error(`wrk failed (exit ${code}): ${stderr || stdout}`));
        return;
      }
      let wrkJiffies = 0;
      if (shstat) {
        const s = shstat[1]!;
        const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
        wrkJiffies = Number(f[13]) + Number(f[14]);
      }
      resolve({ out: JSON.parse(json[1]!) as WrkOut, wrkJiffies });
    });
  });
}

/** CPU in % of one vCPU over a run. other = machine busy - servers - database - wrk (kernel softirq and foreign processes). */
export interface RunCpu {
  server_pct: number;
  /** The PostgreSQL cluster's processes (null without PostgreSQL: SQLite works inside the server). */
  db_pct: number | null;
  wrk_pct: number;
  other_pct: number;
  machine_busy_pct: number;
}

/** What `measure` saw: wrk's output per load, and CPU over the run. */
export interface Measured {
  outs: WrkOut[];
  cpu: RunCpu;
  /** Each load's server, in % of one vCPU. */
  serverPct: number[];
  /** The longest wrk's run. */
  durationUs: number;
}

/**
 * Starts one wrk per load at the same moment and measures CPU around them all; `dbJiffies` reads
 * the database's CPU (PostgreSQL's processes) when there is one outside the servers.
 */
export async function measure(loads: Load[], seconds: number, dbJiffies?: () => number): Promise<Measured> {
  const withDb = dbJiffies !== undefined;
  const sys0 = systemJiffies();
  const srv0 = loads.map((l) => processJiffies(l.server.pid));
  const db0 = dbJiffies?.() ?? 0;
  const runs = await Promise.all(loads.map((load) => spawnWrk(load, seconds)));
  const srv1 = loads.map((l) => processJiffies(l.server.pid));
  const db1 = dbJiffies?.() ?? 0;
  const sys1 = systemJiffies();
  const durationUs = Math.max(...runs.map((r) => r.out.duration_us));
  const wallJiffies = (durationUs / 1e6) * CLK_TCK;
  const pct = (jiffies: number) => (100 * jiffies) / wallJiffies;
  const serverPct = loads.map((_, i) => pct(srv1[i]! - srv0[i]!));
  const serversPct = serverPct.reduce((a, b) => a + b, 0);
  const dbPct = withDb ? pct(db1 - db0) : 0;
  const wrkPct = pct(runs.reduce((a, r) => a + r.wrkJiffies, 0));
  const busy = sys1.total - sys0.total - (sys1.idle - sys0.idle);
  const busyPct = (100 * busy) / ((sys1.total - sys0.total) / cpus().length);
  return {
    outs: runs.map((r) => r.out),
    serverPct,
    durationUs,
    cpu: {
      server_pct: Math.round(serversPct),
      db_pct: withDb ? Math.round(dbPct) : null,
      wrk_pct: Math.round(wrkPct),
      other_pct: Math.max(0, Math.round(busyPct - serversPct - dbPct - wrkPct)),
      machine_busy_pct: Math.round(busyPct),
    },
  };
}

/** One replica's share of a two-replica run. */
export interface ReplicaResult {
  port: number;
  rps: number;
  requests: number;
  p50_ms: number;
  p99_ms: number;
  bad: number;
  server_pct: number;
  server_us_per_req: number;
  server_rss_mb: number;
}

/** What PostgreSQL did during a run (cluster-wide; only this config was running). */
export interface PgRun {
  /** Write transactions (transaction ids assigned; exact). */
  write_xacts: number;
  /** WAL flushes (pg_stat_wal.wal_sync; statistics may lag by up to ~1 s). */
  wal_syncs: number;
  wal_bytes: number;
  write_xacts_per_req: number;
  /** Requests per WAL flush: how well commits were grouped (signals: signals per fsync). */
  reqs_per_wal_sync: number | null;
  wal_bytes_per_req: number;
}

/** One run of one config: wrk's figures summed over the replicas, and CPU. */
export interface RunResult {
  config: string;
  round: number;
  /** Requests per second, summed over the replicas. */
  rps: number;
  requests: number;
  /** Latency percentiles; with two replicas, the worse of the two. */
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
  statuses: Record<string, number>;
  /** Replies that are not the expected status, socket errors and timeouts, and signals resent after the id list ran out. */
  bad: number;
  socket_errors: number;
  idle_before: number;
  cpu: RunCpu;
  /** Server CPU time (utime + stime, all replicas) per reply: less sensitive to the client and co-tenants than req/s. */
  server_us_per_req: number;
  /** PostgreSQL's CPU time per reply (null without PostgreSQL). */
  db_us_per_req: number | null;
  /** The server's resident memory after the run (summed over the replicas). */
  server_rss_mb: number;
  ids_used?: number;
  /** Per replica, when there are two. */
  replicas?: ReplicaResult[];
  pg?: PgRun;
}

const rpsOf = (out: WrkOut) => Math.round(out.requests / (out.duration_us / 1e6));
const socketErrorsOf = (out: WrkOut) => out.errors.connect + out.errors.read + out.errors.write + out.errors.timeout;
/** What a reply must be: its status, and whether a signal resent after the id list ran out counts against the run. */
export interface Expected {
  status: number;
  /** True for hearth, whose deployments take one first signal each; the no-DB baseline does not care. */
  freshIds: boolean;
}

/** Replies other than expected, socket errors, and (with freshIds) requests sent after the deployment list ran out. */
const badOf = (out: WrkOut, expected: Expected) =>
  out.requests - (out.statuses[String(expected.status)] ?? 0) + socketErrorsOf(out) + (expected.freshIds ? out.ids_exhausted : 0);

/** A run's result from what `measure` saw. */
export function toResult(
  config: string,
  round: number,
  loads: Load[],
  measured: Measured,
  expected: Expected,
  idle: number,
  pg: PgRun | undefined,
): RunResult {
  const { outs, cpu, serverPct, durationUs } = measured;
  const requests = outs.reduce((a, o) => a + o.requests, 0);
  const statuses: Record<string, number> = {};
  for (const out of outs) for (const [status, n] of Object.entries(out.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  const worst = (pick: (o: WrkOut) => number) => Math.max(...outs.map(pick)) / 1000;
  const usPerReq = (pctOfOneCpu: number, n: number) => (n > 0 ? Math.round((pctOfOneCpu * (durationUs / 100)) / n) : NaN);
  const rss = loads.map((l) => rssMb(l.server.pid));
  const idsUsed = outs.reduce((a, o) => a + o.ids_used, 0);
  return {
    config,
    round,
    rps: outs.reduce((a, o) => a + rpsOf(o), 0),
    requests,
    p50_ms: worst((o) => o.latency_us.p50),
    p90_ms: worst((o) => o.latency_us.p90),
    p99_ms: worst((o) => o.latency_us.p99),
    max_ms: worst((o) => o.latency_us.max),
    statuses,
    bad: outs.reduce((a, o) => a + badOf(o, expected), 0),
    socket_errors: outs.reduce((a, o) => a + socketErrorsOf(o), 0),
    idle_before: idle,
    cpu,
    server_us_per_req: usPerReq(cpu.server_pct, requests),
    db_us_per_req: cpu.db_pct === null ? null : usPerReq(cpu.db_pct, requests),
    server_rss_mb: rss.reduce((a, b) => a + b, 0),
    ...(idsUsed ? { ids_used: idsUsed } : {}),
    ...(loads.length > 1
      ? {
          replicas: loads.map((load, i) => ({
            port: load.server.port,
            rps: rpsOf(outs[i]!),
            requests: outs[i]!.requests,
            p50_ms: outs[i]!.latency_us.p50 / 1000,
            p99_ms: outs[i]!.latency_us.p99 / 1000,
            bad: badOf(outs[i]!, expected),
            server_pct: Math.round(serverPct[i]!),
            server_us_per_req: usPerReq(serverPct[i]!, outs[i]!.requests),
            server_rss_mb: rss[i]!,
          })),
        }
      : {}),
    ...(pg ? { pg } : {}),
  };
}

/** The share of a run in two counter readings. */
export function pgRun(before: PgCounters, after: PgCounters, requests: number): PgRun {
  // Each reading assigns a transaction id of its own (pg_current_xact_id), hence the - 1.
  const writeXacts = after.xid - before.xid - 1;
  const walSyncs = after.walSyncs - before.walSyncs;
  const walBytes = after.walBytes - before.walBytes;
  const per = (n: number) => (requests > 0 ? Math.round((n / requests) * 1000) / 1000 : NaN);
  return {
    write_xacts: writeXacts,
    wal_syncs: walSyncs,
    wal_bytes: walBytes,
    write_xacts_per_req: per(writeXacts),
    reqs_per_wal_sync: walSyncs > 0 ? Math.round((requests / walSyncs) * 10) / 10 : null,
    wal_bytes_per_req: requests > 0 ? Math.round(walBytes / requests) : NaN,
  };
}
