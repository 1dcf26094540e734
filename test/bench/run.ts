// hearth benchmarks: `npm run bench` (= tsx test/bench/run.ts). See test/bench/README.md.
//
// In one run, side by side, with rounds interleaved across configs (compare only within one run:
// shared/reference/performance.md measured ±25-45 % run-to-run host noise on this machine):
//   1. metadata: authenticated GET /v1/guest/metadata answered 304, hearth vs a bare fastify route;
//   2. signals: durable first signals of IN_PROGRESS deployments, hearth vs the same route without
//      the database (servers/signal-baseline.ts says exactly what that baseline contains).
// Every server is its own `node --import tsx` process on 127.0.0.1; wrk (Debian) is the client.
// Only 127.0.0.1 is contacted. Everything is bounded in time; the temp data dir is removed.
//
// Knobs (env): BENCH_ROUNDS (3), BENCH_DURATION_S (8), BENCH_CONNECTIONS (64), BENCH_WARMUP_S (5),
// BENCH_IDLE_TARGET (80 = % idle wanted before each run), BENCH_IDLE_WAIT_S (8 = longest wait for it),
// BENCH_CPU_PROF=1 (round 1 of every config is CPU-profiled inside its server; the .cpuprofile
// files go next to the results; summarise one with tools/cpuprofile-top.ts),
// BENCH_ONLY=meta|signal (run one benchmark), BENCH_INITIAL_DEPLOYMENTS (30000), BENCH_WATCHDOG_S (540).

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Database from 'better-sqlite3';

// ---------------------------------------------------------------------------------------------
// Settings

const ROOT = new URL('../..', import.meta.url).pathname;
const BENCH_DIR = new URL('.', import.meta.url).pathname;
const num = (name: string, fallback: number) => {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : Number(value);
};
const ROUNDS = num('BENCH_ROUNDS', 3);
const DURATION_S = num('BENCH_DURATION_S', 8);
const CONNECTIONS = num('BENCH_CONNECTIONS', 64);
const THREADS = 1;
const WARMUP_S = num('BENCH_WARMUP_S', 5);
const IDLE_TARGET = num('BENCH_IDLE_TARGET', 80);
const IDLE_WAIT_S = num('BENCH_IDLE_WAIT_S', 8);
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
/** `meta` or `signal` runs only that benchmark (both by default). */
const ONLY = process.env.BENCH_ONLY ?? '';
/** The whole run is killed after this (servers included): the bench must always stop by itself. */
const WATCHDOG_MS = num('BENCH_WATCHDOG_S', 540) * 1000;
/** Agent servers the signal deployments are spread over. */
const SIGNAL_SERVERS = 8;
/** Deployments created before the first signal run; topped up between runs as needed. */
const INITIAL_DEPLOYMENTS = num('BENCH_INITIAL_DEPLOYMENTS', 30_000);
const ADMIN_TOKEN = 'bench-admin-token-0123456789';
const SECRET_KEY = 'bench-secret-key-0123456789abcdef';
const GOAL_META = 0.8;
const GOAL_SIGNAL = 0.7;
const CLK_TCK = 100;

const startedAt = new Date();
const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// Processes

const children: ChildProcess[] = [];

/** Environment for child processes: no NODE_EXTRA_CA_CERTS (it costs ~44 ms and 2 MB per node start). */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

function killAll(): void {
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

const watchdog = setTimeout(() => {
  process.stderr.write(`bench: watchdog: still running after ${WATCHDOG_MS / 1000} s, killing everything\n`);
  killAll();
  process.exit(3);
}, WATCHDOG_MS);
watchdog.unref();
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    killAll();
    process.exit(130);
  });
}

/** A free TCP port on 127.0.0.1 (the OS picks it; the tiny race until the server binds is accepted). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

interface ServerProc {
  name: string;
  port: number;
  url: string;
  child: ChildProcess;
  pid: number;
  /** Profiles the server wrote (BENCH_CPU_PROF=1). */
  profiles: string[];
}

/** Spawns `node --import tsx <file> <args>` and waits for its ready line (60 s at most). */
async function startServer(name: string, file: string, args: string[], profileDir?: string): Promise<ServerProc> {
  const port = await freePort();
  const profiles: string[] = [];
  const child = spawn(process.execPath, ['--import', 'tsx', join(BENCH_DIR, 'servers', file), String(port), ...args], {
    cwd: ROOT,
    env: childEnv({
      BENCH_ADMIN_TOKEN: ADMIN_TOKEN,
      BENCH_SECRET_KEY: SECRET_KEY,
      ...(profileDir ? { BENCH_PROFILE_DIR: profileDir, BENCH_PROFILE_NAME: name } : {}),
    }),
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  children.push(child);
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 60 s`)), 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before it was ready`));
    });
    createInterface({ input: child.stdout }).on('line', (line) => {
      if (line.includes('"ready":true')) {
        clearTimeout(timer);
        resolve();
      } else if (line.startsWith('{"profile":')) {
        profiles.push((JSON.parse(line) as { profile: string }).profile);
      }
    });
  });
  await ready;
  return { name, port, url: `http://127.0.0.1:${port}`, child, pid: child.pid!, profiles };
}

/** Starts (`on`) or stops and writes (`off`) a server's CPU profile; waits for the file when stopping. */
async function toggleProfile(server: ServerProc, on: boolean): Promise<void> {
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
async function stopServer(server: ServerProc): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()));
  server.child.stdin?.end();
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// HTTP (setup only; the measurements are wrk's)

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

function http(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<HttpReply> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method,
        agent,
        headers: {
          ...headers,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: timed out`)));
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

async function operator<T>(base: string, method: string, path: string, body: unknown, expect: number): Promise<T> {
  const reply = await http(method, `${base}${path}`, { 'x-auth-token': ADMIN_TOKEN }, body);
  if (reply.status !== expect) throw new Error(`${method} ${path}: expected ${expect}, got ${reply.status}: ${reply.text.slice(0, 300)}`);
  return JSON.parse(reply.text) as T;
}

interface CreatedServer {
  server: { id: string };
  credential: { token: string };
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (/proc)

function systemJiffies(): { total: number; idle: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  return { total, idle: (fields[3] ?? 0) + (fields[4] ?? 0) };
}

/** utime + stime of a process, in jiffies (0 once it is gone). */
function processJiffies(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** % of all CPUs idle over `ms`. */
async function idlePercent(ms = 1000): Promise<number> {
  const a = systemJiffies();
  await sleep(ms);
  const b = systemJiffies();
  return b.total === a.total ? 100 : (100 * (b.idle - a.idle)) / (b.total - a.total);
}

/** performance.md's idle check: sample 1 s; wait (up to IDLE_WAIT_S) until IDLE_TARGET % idle. */
async function waitForIdle(): Promise<{ idle: number; waitedS: number }> {
  let idle = await idlePercent();
  let waited = 1;
  while (idle < IDLE_TARGET && waited < IDLE_WAIT_S) {
    idle = await idlePercent();
    waited++;
  }
  return { idle: Math.round(idle), waitedS: waited };
}

// ---------------------------------------------------------------------------------------------
// wrk

interface WrkOut {
  requests: number;
  duration_us: number;
  bytes: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  latency_us: { p50: number; p90: number; p99: number; max: number; mean: number };
  statuses: Record<string, number>;
  ids_used: number;
  ids_exhausted: number;
}

interface RunResult {
  config: string;
  round: number;
  rps: number;
  requests: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  max_ms: number;
  statuses: Record<string, number>;
  /** Replies that are not the expected status, plus socket errors and timeouts. */
  bad: number;
  socket_errors: number;
  idle_before: number;
  /** CPU in % of one vCPU over the run; other = machine busy - server - wrk (kernel softirq and foreign processes). */
  cpu: { server_pct: number; wrk_pct: number; other_pct: number; machine_busy_pct: number };
  /** Server CPU time (utime + stime) per reply: less sensitive to the client and co-tenants than req/s. */
  server_us_per_req: number;
  /** The server's resident memory after the run. */
  server_rss_mb: number;
  ids_used?: number;
}

function runWrk(
  url: string,
  script: string,
  seconds: number,
  headers: string[],
  scriptArgs: string[],
  serverPid: number,
): Promise<{ out: WrkOut; cpu: RunResult['cpu'] }> {
  const wrkArgs = [`-t${THREADS}`, `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '5s', '-s', join(BENCH_DIR, 'lua', script)];
  for (const h of headers) wrkArgs.push('-H', h);
  wrkArgs.push(url);
  if (scriptArgs.length > 0) wrkArgs.push('--', ...scriptArgs);
  // `sh` reaps wrk, then prints its own /proc stat: cutime + cstime are wrk's CPU.
  const shell = 'wrk "$@"; rc=$?; echo "SHSTAT $(cat /proc/$$/stat)"; exit $rc';
  const sys0 = systemJiffies();
  const srv0 = processJiffies(serverPid);
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', shell, 'sh', ...wrkArgs], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv() });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const guard = setTimeout(() => child.kill('SIGKILL'), (seconds + 30) * 1000);
    child.on('exit', (code) => {
      clearTimeout(guard);
      const srv1 = processJiffies(serverPid);
      const sys1 = systemJiffies();
      const json = /BENCH_JSON (\{.*\})/.exec(stdout);
      const shstat = /SHSTAT (.*)/.exec(stdout);
      if (code !== 0 || !json) {
        reject(new Error(`wrk failed (exit ${code}): ${stderr || stdout}`));
        return;
      }
      const out = JSON.parse(json[1]!) as WrkOut;
      let wrkJiffies = 0;
      if (shstat) {
        const s = shstat[1]!;
        const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
        wrkJiffies = Number(f[13]) + Number(f[14]);
      }
      const wallJiffies = (out.duration_us / 1e6) * CLK_TCK;
      const busy = sys1.total - sys0.total - (sys1.idle - sys0.idle);
      const ncpu = cpus().length;
      const serverPct = (100 * (srv1 - srv0)) / wallJiffies;
      const wrkPct = (100 * wrkJiffies) / wallJiffies;
      const busyPct = (100 * busy) / ((sys1.total - sys0.total) / ncpu);
      resolve({
        out,
        cpu: {
          server_pct: Math.round(serverPct),
          wrk_pct: Math.round(wrkPct),
          other_pct: Math.max(0, Math.round(busyPct - serverPct - wrkPct)),
          machine_busy_pct: Math.round(busyPct),
        },
      });
    });
  });
}

/** VmRSS of a process in MiB. */
function rssMb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Math.round(Number(match[1]) / 1024) : NaN;
  } catch {
    return NaN;
  }
}

function toResult(
  config: string,
  round: number,
  out: WrkOut,
  cpu: RunResult['cpu'],
  expected: number,
  idle: number,
  serverPid: number,
): RunResult {
  const good = out.statuses[String(expected)] ?? 0;
  const socketErrors = out.errors.connect + out.errors.read + out.errors.write + out.errors.timeout;
  return {
    config,
    round,
    rps: Math.round(out.requests / (out.duration_us / 1e6)),
    requests: out.requests,
    p50_ms: out.latency_us.p50 / 1000,
    p90_ms: out.latency_us.p90 / 1000,
    p99_ms: out.latency_us.p99 / 1000,
    max_ms: out.latency_us.max / 1000,
    statuses: out.statuses,
    bad: out.requests - good + socketErrors,
    socket_errors: socketErrors,
    idle_before: idle,
    cpu,
    server_us_per_req: out.requests > 0 ? Math.round((cpu.server_pct * (out.duration_us / 100)) / out.requests) : NaN,
    server_rss_mb: rssMb(serverPid),
    ...(out.ids_used ? { ids_used: out.ids_used } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Statistics and output

const median = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
const fmtRate = (n: number) =>
  n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n >= 1000 ? `${(n / 1000).toFixed(2)}k` : String(Math.round(n));
const fmtMs = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));

interface Summary {
  config: string;
  runs: number;
  rps_median: number;
  rps_min: number;
  rps_max: number;
  p50_ms_median: number;
  p99_ms_median: number;
  p99_ms_max: number;
  bad_total: number;
  server_cpu_pct_median: number;
  server_us_per_req_median: number;
  server_rss_mb_max: number;
  wrk_cpu_pct_median: number;
  other_cpu_pct_median: number;
}

function summarise(config: string, runs: RunResult[]): Summary {
  const mine = runs.filter((r) => r.config === config);
  const rates = mine.map((r) => r.rps);
  return {
    config,
    runs: mine.length,
    rps_median: Math.round(median(rates)),
    rps_min: Math.min(...rates),
    rps_max: Math.max(...rates),
    p50_ms_median: median(mine.map((r) => r.p50_ms)),
    p99_ms_median: median(mine.map((r) => r.p99_ms)),
    p99_ms_max: Math.max(...mine.map((r) => r.p99_ms)),
    bad_total: mine.reduce((a, r) => a + r.bad, 0),
    server_cpu_pct_median: median(mine.map((r) => r.cpu.server_pct)),
    server_us_per_req_median: median(mine.map((r) => r.server_us_per_req)),
    server_rss_mb_max: Math.max(...mine.map((r) => r.server_rss_mb)),
    wrk_cpu_pct_median: median(mine.map((r) => r.cpu.wrk_pct)),
    other_cpu_pct_median: median(mine.map((r) => r.cpu.other_pct)),
  };
}

interface Ratio {
  name: string;
  numerator: string;
  denominator: string;
  /** Median of the per-round ratios (each round's pair ran back to back): the headline. */
  paired_median: number;
  paired_min: number;
  paired_max: number;
  /** Ratio of the two medians, for reference. */
  of_medians: number;
  goal: number;
  meets_goal: boolean;
}

function ratio(name: string, numerator: string, denominator: string, runs: RunResult[], goal: number): Ratio {
  const perRound: number[] = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const a = runs.find((r) => r.config === numerator && r.round === round);
    const b = runs.find((r) => r.config === denominator && r.round === round);
    if (a && b && b.rps > 0) perRound.push(a.rps / b.rps);
  }
  const ofMedians =
    median(runs.filter((r) => r.config === numerator).map((r) => r.rps)) /
    median(runs.filter((r) => r.config === denominator).map((r) => r.rps));
  const paired = median(perRound);
  const round3 = (n: number) => Math.round(n * 1000) / 1000;
  return {
    name,
    numerator,
    denominator,
    paired_median: round3(paired),
    paired_min: round3(Math.min(...perRound)),
    paired_max: round3(Math.max(...perRound)),
    of_medians: round3(ofMedians),
    goal,
    meets_goal: paired >= goal,
  };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r, ri) => r.map((c, i) => (i === 0 || ri === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

// ---------------------------------------------------------------------------------------------
// Main

const CONFIGS = {
  metaHearth: 'meta-304/hearth',
  metaBare: 'meta-304/bare-fastify',
  sigHearth: 'signal/hearth',
  sigBase: 'signal/no-db-baseline',
} as const;

function machineInfo() {
  const cpuList = cpus();
  const wrkVersion = spawnSync('wrk', ['-v'], { encoding: 'utf8' });
  return {
    node: process.version,
    cpus: cpuList.length,
    cpu_model: cpuList[0]?.model ?? 'unknown',
    memory_gib: Math.round(totalmem() / 2 ** 30),
    loadavg: loadavg().map((n) => Math.round(n * 100) / 100),
    wrk: (wrkVersion.stdout || wrkVersion.stderr || '').split('\n')[0]?.trim() ?? 'unknown',
  };
}

async function main(): Promise<void> {
  if (spawnSync('wrk', ['-v']).error) {
    log("bench: wrk is not installed. Install Debian's: apt-get update && apt-get install -y wrk");
    process.exit(1);
  }
  const machine = machineInfo();
  log(`hearth benchmarks ${startedAt.toISOString()}`);
  log(
    `machine: ${machine.cpus} vCPU ${machine.cpu_model}, ${machine.memory_gib} GiB, node ${machine.node}, ${machine.wrk}, load ${machine.loadavg.join(' ')}`,
  );
  log(
    `plan: ${ROUNDS} rounds x ${ONLY ? `2 configs (${ONLY} only)` : '4 configs'} x ${DURATION_S} s, wrk -t${THREADS} -c${CONNECTIONS}, interleaved; ${WARMUP_S} s warm-up each`,
  );
  const idleAtStart = await idlePercent();
  log(
    `idle check: ${idleAtStart.toFixed(0)} % idle over 1 s (target before each run: >= ${IDLE_TARGET} %, waiting at most ${IDLE_WAIT_S} s)`,
  );

  const tmp = mkdtempSync(join(tmpdir(), 'hearth-bench-'));
  const resultsDir = join(BENCH_DIR, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  try {
    // --- servers -------------------------------------------------------------------------
    const t0 = Date.now();
    const profileDir = CPU_PROF ? resultsDir : undefined;
    const [hearth, sigBase] = await Promise.all([
      startServer(`${stamp}-hearth`, 'hearth.ts', [join(tmp, 'data')], profileDir),
      startServer(`${stamp}-signal-baseline`, 'signal-baseline.ts', [], profileDir),
    ]);
    const api = (method: string, path: string, body: unknown, expect: number) => operator(hearth.url, method, path, body, expect);

    // --- metadata fixture: one server with two deployments (a ~1.6 KB document) -------------
    const metaServer = (await api('POST', '/v1/default/servers', { name: 'bench-meta' }, 201)) as CreatedServer;
    const script = '#!/bin/sh\nset -eu\necho "configuring $(hostname)"\n' + 'echo "step"\n'.repeat(20);
    for (const name of ['bench-meta-a', 'bench-meta-b']) {
      const { software_config: config } = (await api(
        'POST',
        '/v1/default/software_configs',
        { name, group: 'script', config: script, outputs: [{ name: 'result' }] },
        200,
      )) as { software_config: { id: string } };
      await api('POST', '/v1/default/software_deployments', { config_id: config.id, server_id: metaServer.server.id }, 200);
    }
    const metaAuth = `Bearer ${metaServer.credential.token}`;
    const first = await http('GET', `${hearth.url}/v1/guest/metadata`, { authorization: metaAuth });
    const etag = String(first.headers.etag ?? '');
    if (first.status !== 200 || !etag) throw new Error(`GET /v1/guest/metadata: ${first.status} ${first.text.slice(0, 200)}`);
    const check = await http('GET', `${hearth.url}/v1/guest/metadata`, { authorization: metaAuth, 'if-none-match': etag });
    if (check.status !== 304) throw new Error(`conditional GET /v1/guest/metadata answered ${check.status}, not 304`);
    const metaBodyFile = join(tmp, 'metadata.json');
    writeFileSync(metaBodyFile, first.text);
    const metaBare = await startServer(`${stamp}-bare-meta`, 'bare-meta.ts', [metaBodyFile, etag], profileDir);
    const bareCheck = await http('GET', `${metaBare.url}/v1/guest/metadata`, { authorization: metaAuth, 'if-none-match': etag });
    if (bareCheck.status !== 304) throw new Error(`bare server answered ${bareCheck.status}, not 304`);
    log(
      `servers up in ${((Date.now() - t0) / 1000).toFixed(1)} s: hearth :${hearth.port} (pid ${hearth.pid}), bare-meta :${metaBare.port}, signal-baseline :${sigBase.port}; metadata document ${first.text.length} B, ETag ${etag}`,
    );

    // --- signal fixture: agent servers, one config, a pool of IN_PROGRESS deployments -------
    const sigServers: CreatedServer[] = [];
    for (let i = 0; i < SIGNAL_SERVERS; i++)
      sigServers.push((await api('POST', '/v1/default/servers', { name: `bench-signal-${i}` }, 201)) as CreatedServer);
    const { software_config: sigConfig } = (await api(
      'POST',
      '/v1/default/software_configs',
      { name: 'bench-signal', group: 'script', config: 'echo ok', outputs: [{ name: 'result' }] },
      200,
    )) as {
      software_config: { id: string };
    };
    const pool: Array<[string, number]> = [];
    let created = 0;
    let createSeconds = 0;
    const createDeployments = async (count: number) => {
      const start = Date.now();
      let next = 0;
      const worker = async () => {
        while (next < count) {
          const n = next++;
          const s = (created + n) % SIGNAL_SERVERS;
          const { software_deployment: d } = (await api(
            'POST',
            '/v1/default/software_deployments',
            { config_id: sigConfig.id, server_id: sigServers[s]!.server.id },
            200,
          )) as {
            software_deployment: { id: string; status: string };
          };
          if (d.status !== 'IN_PROGRESS') throw new Error(`new deployment is ${d.status}`);
          pool.push([d.id, s + 1]);
        }
      };
      await Promise.all(Array.from({ length: 64 }, worker));
      created += count;
      createSeconds += (Date.now() - start) / 1000;
    };
    if (ONLY !== 'meta') await createDeployments(INITIAL_DEPLOYMENTS);
    if (created > 0)
      log(
        `created ${INITIAL_DEPLOYMENTS} IN_PROGRESS deployments over ${SIGNAL_SERVERS} servers in ${createSeconds.toFixed(1)} s (${Math.round(INITIAL_DEPLOYMENTS / createSeconds)}/s through the operator API)`,
      );

    // ~1 KB signal body, as a hook's result would be.
    const signalBody = JSON.stringify({
      deploy_stdout: `${'configured step ok\n'.repeat(45)}done\n`,
      deploy_stderr: '',
      deploy_status_code: 0,
      result: 'ok',
    });
    const signalBodyFile = join(tmp, 'signal.json');
    writeFileSync(signalBodyFile, signalBody);
    const tokensLine = sigServers.map((s) => s.credential.token).join(' ');
    const idsFile = join(tmp, 'ids.txt');
    const writeIds = () => writeFileSync(idsFile, `${tokensLine}\n${pool.map(([id, t]) => `${id} ${t}`).join('\n')}\n`);
    let maxSignalRate = 0;
    let signalAcks = 0;
    const ensurePool = async (seconds: number) => {
      const need = Math.ceil(Math.max(maxSignalRate, 2000) * seconds * 1.5) + 2000;
      if (pool.length < need) {
        const start = Date.now();
        const add = need - pool.length;
        await createDeployments(add);
        log(`  (created ${add} more deployments in ${((Date.now() - start) / 1000).toFixed(1)} s)`);
      }
      writeIds();
    };

    // --- what one run of each config is -----------------------------------------------------
    const metaHeaders = [`Authorization: ${metaAuth}`, `If-None-Match: ${etag}`];
    const metaPath = '/v1/guest/metadata';
    const profiles: string[] = [];
    const profiled = async <T>(server: ServerProc, config: string, round: number, run: () => Promise<T>): Promise<T> => {
      if (!CPU_PROF || round !== 1) return run();
      await toggleProfile(server, true);
      try {
        return await run();
      } finally {
        await toggleProfile(server, false);
        const written = server.profiles.pop();
        if (written) {
          const named = join(resultsDir, `${stamp}-${config.replace(/\//g, '_')}.cpuprofile`);
          renameSync(written, named);
          profiles.push(named);
        }
      }
    };
    const runConfig = async (config: string, seconds: number, round: number): Promise<RunResult> => {
      switch (config) {
        case CONFIGS.metaHearth:
        case CONFIGS.metaBare: {
          const server = config === CONFIGS.metaHearth ? hearth : metaBare;
          const { idle } = round > 0 ? await waitForIdle() : { idle: NaN };
          const { out, cpu } = await profiled(server, config, round, () =>
            runWrk(`${server.url}${metaPath}`, 'meta.lua', seconds, metaHeaders, [], server.pid),
          );
          return toResult(config, round, out, cpu, 304, idle, server.pid);
        }
        case CONFIGS.sigHearth: {
          await ensurePool(seconds);
          const { idle } = round > 0 ? await waitForIdle() : { idle: NaN };
          const { out, cpu } = await profiled(hearth, config, round, () =>
            runWrk(hearth.url, 'signal.lua', seconds, [], [idsFile, signalBodyFile, String(THREADS)], hearth.pid),
          );
          pool.splice(0, out.ids_used);
          signalAcks += out.statuses['200'] ?? 0;
          const result = toResult(config, round, out, cpu, 200, idle, hearth.pid);
          maxSignalRate = Math.max(maxSignalRate, result.rps);
          return result;
        }
        case CONFIGS.sigBase: {
          writeIds(); // the same requests as hearth gets (the baseline does not consume them)
          const { idle } = round > 0 ? await waitForIdle() : { idle: NaN };
          const { out, cpu } = await profiled(sigBase, config, round, () =>
            runWrk(sigBase.url, 'signal.lua', seconds, [], [idsFile, signalBodyFile, String(THREADS)], sigBase.pid),
          );
          return toResult(config, round, out, cpu, 200, idle, sigBase.pid);
        }
        default:
          throw new Error(`unknown config ${config}`);
      }
    };

    // --- warm-up (JIT, caches, the first WAL growth); not recorded -------------------------
    const order = [CONFIGS.metaHearth, CONFIGS.metaBare, CONFIGS.sigHearth, CONFIGS.sigBase].filter((c) => !ONLY || c.startsWith(ONLY));
    for (const config of order) {
      const r = await runConfig(config, WARMUP_S, 0);
      log(`warm-up ${config.padEnd(24)} ${fmtRate(r.rps).padStart(6)} req/s${r.bad ? `, ${r.bad} bad` : ''}`);
    }

    // --- measured rounds, interleaved; each round starts with a different config ------------
    const runs: RunResult[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const shift = (round - 1) % order.length;
      const roundOrder = [...order.slice(shift), ...order.slice(0, shift)];
      for (const config of roundOrder) {
        const r = await runConfig(config, DURATION_S, round);
        runs.push(r);
        log(
          `round ${round} ${config.padEnd(24)} ${fmtRate(r.rps).padStart(6)} req/s  p50 ${fmtMs(r.p50_ms)} ms  p99 ${fmtMs(r.p99_ms)} ms  bad ${r.bad}  ` +
            `cpu server ${r.cpu.server_pct} % (${r.server_us_per_req} µs/req) wrk ${r.cpu.wrk_pct} % other ${r.cpu.other_pct} %  (idle before ${r.idle_before} %)`,
        );
      }
    }

    // --- durability check: every 200 acknowledged is a committed signal row -----------------
    const db = new Database(join(tmp, 'data', 'hearth.db'), { readonly: true, fileMustExist: true });
    const rowsStored = (db.prepare('select count(*) as n from signals').get() as { n: number }).n;
    const stillInProgress = (
      db.prepare("select count(*) as n from software_deployments where status = 'IN_PROGRESS'").get() as { n: number }
    ).n;
    db.close();
    const durable = {
      signal_acks_200: signalAcks,
      signal_rows_stored: rowsStored,
      rows_minus_acks: rowsStored - signalAcks,
      ok: rowsStored >= signalAcks,
    };

    await Promise.all([stopServer(hearth), stopServer(metaBare), stopServer(sigBase)]);

    // --- results --------------------------------------------------------------------------
    const summaries = order.map((c) => summarise(c, runs));
    const ratios = [
      ...(ONLY === 'signal' ? [] : [ratio('metadata 304: hearth / bare fastify', CONFIGS.metaHearth, CONFIGS.metaBare, runs, GOAL_META)]),
      ...(ONLY === 'meta' ? [] : [ratio('signals: hearth / no-DB baseline', CONFIGS.sigHearth, CONFIGS.sigBase, runs, GOAL_SIGNAL)]),
    ];
    log('');
    log(
      table([
        [
          'config',
          'req/s median',
          '[min-max]',
          'p50 ms',
          'p99 ms',
          'non-expected',
          'server CPU',
          'µs CPU/req',
          'wrk CPU',
          'other CPU',
          'RSS MB',
        ],
        ...summaries.map((s) => [
          s.config,
          fmtRate(s.rps_median),
          `[${fmtRate(s.rps_min)}-${fmtRate(s.rps_max)}]`,
          fmtMs(s.p50_ms_median),
          fmtMs(s.p99_ms_median),
          String(s.bad_total),
          `${s.server_cpu_pct_median} %`,
          String(s.server_us_per_req_median),
          `${s.wrk_cpu_pct_median} %`,
          `${s.other_cpu_pct_median} %`,
          String(s.server_rss_mb_max),
        ]),
      ]),
    );
    log(
      '(medians over rounds; "non-expected" = replies other than 304 (metadata) or 200 (signals) plus socket errors, summed over rounds;\n' +
        ' CPU in % of one vCPU; µs CPU/req = server utime+stime per reply; other = kernel softirq + foreign processes; RSS = largest after a run)',
    );
    log('');
    for (const r of ratios) {
      log(
        `${r.name.padEnd(38)} ${r.paired_median.toFixed(2)}  (per-round [${r.paired_min.toFixed(2)}-${r.paired_max.toFixed(2)}], ratio of medians ${r.of_medians.toFixed(2)})  goal >= ${r.goal}: ${r.meets_goal ? 'met' : 'NOT met'}`,
      );
    }
    log(
      `durability: ${durable.signal_acks_200} signals acknowledged 200 (warm-up included), ${durable.signal_rows_stored} signal rows committed: ${durable.ok ? 'ok' : 'FEWER ROWS THAN ACKS'}` +
        ` (+${durable.rows_minus_acks} in flight when wrk stopped); ${stillInProgress} deployments left IN_PROGRESS`,
    );
    const totalBad = summaries.reduce((a, s) => a + s.bad_total, 0);

    const file = join(resultsDir, `${stamp}.json`);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          started_at: startedAt.toISOString(),
          wall_s: Math.round((Date.now() - startedAt.getTime()) / 1000),
          command: 'npm run bench',
          settings: {
            rounds: ROUNDS,
            duration_s: DURATION_S,
            warmup_s: WARMUP_S,
            wrk: `-t${THREADS} -c${CONNECTIONS}`,
            idle_target_pct: IDLE_TARGET,
            idle_wait_max_s: IDLE_WAIT_S,
            cpu_prof: CPU_PROF,
          },
          machine: { ...machine, idle_at_start_pct: Math.round(idleAtStart) },
          fixture: {
            metadata_document_bytes: first.text.length,
            etag,
            signal_body_bytes: signalBody.length,
            signal_servers: SIGNAL_SERVERS,
            deployments_created: created,
            deployment_create_rate: createSeconds > 0 ? Math.round(created / createSeconds) : null,
          },
          summaries,
          ratios,
          durability: durable,
          runs,
          ...(profiles.length > 0 ? { cpu_profiles: profiles, cpu_profiles_note: 'round 1 of each config ran under the profiler' } : {}),
        },
        null,
        2,
      )}\n`,
    );
    log(`results: ${file}`);
    for (const p of profiles) log(`CPU profile: ${p}`);
    log(`wall time ${Math.round((Date.now() - startedAt.getTime()) / 1000)} s`);
    if (totalBad > 0 || !durable.ok) process.exitCode = 1;
  } finally {
    killAll();
    agent.destroy();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
clearTimeout(watchdog);
