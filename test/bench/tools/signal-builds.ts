// Diagnostic (not run by `npm run bench`): durable signals of several hearth builds side by side
// with the no-DB baseline, in interleaved rounds (each round starts with a different config), as
// run.ts does for one build. A build is the root of a checkout (e.g. `git worktree add
// /tmp/before <commit>`); a root written `ROOT:time-ordered` gets deployments whose ids sort by
// creation time (UUIDv7 layout), to show what such ids would do without changing hearth.
// The deployments are inserted straight into each build's SQLite file between rounds (IN_PROGRESS,
// each with its deployment.created event, as the operator API writes them): faster than the API,
// and the same for every build. wrk, lua/signal.lua and the body are run.ts's.
// Usage: tsx test/bench/tools/signal-builds.ts <seconds> <rounds> <root[:time-ordered]>...
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ADMIN_TOKEN, SECRET_KEY, SIGNAL_BODY, SIGNAL_SERVERS, closeSetupClient, operator } from '../fixtures.ts';

const [secondsArg, roundsArg, ...builds] = process.argv.slice(2);
const SECONDS = Number(secondsArg);
const ROUNDS = Number(roundsArg);
if (!SECONDS || !ROUNDS || builds.length === 0) throw new Error('usage: signal-builds.ts <seconds> <rounds> <root[:time-ordered]>...');
const BENCH = new URL('..', import.meta.url).pathname;
/** Deployments added to a build's pool whenever fewer than that many are left (a round at 9k/s for 8 s uses 72,000). */
const TOP_UP = 120_000;

interface Config {
  name: string;
  child: ChildProcess;
  url: string;
  /** Hearth builds only: the SQLite file, the agents' tokens, server ids and config, the pool. */
  file?: string;
  tokens: string[];
  serverIds: string[];
  configId?: string;
  timeOrdered: boolean;
  pool: string[];
  rates: number[];
}

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

const env: NodeJS.ProcessEnv = { ...process.env, BENCH_ADMIN_TOKEN: ADMIN_TOKEN, BENCH_SECRET_KEY: SECRET_KEY };
delete env.NODE_EXTRA_CA_CERTS;
const dir = mkdtempSync(join(tmpdir(), 'hearth-builds-'));

async function start(name: string, script: string, args: string[], timeOrdered: boolean): Promise<Config> {
  const port = await freePort();
  const child = spawn('node', ['--import', 'tsx', script, String(port), ...args], { env, stdio: ['pipe', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve()));
  return { name, child, url: `http://127.0.0.1:${port}`, tokens: [], serverIds: [], timeOrdered, pool: [], rates: [] };
}

/** A UUIDv7-style id: 48 bits of milliseconds, then random bits. */
function timeOrderedUuid(ms: number): string {
  const time = ms.toString(16).padStart(12, '0');
  const random = randomUUID();
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15, 18)}-${random.slice(19, 23)}-${random.slice(24)}`;
}

/** Inserts `count` IN_PROGRESS deployments (and their created events) into a build's database. */
function addDeployments(config: Config, count: number): void {
  const db = new Database(config.file);
  db.pragma('busy_timeout = 10000');
  const deployment = db.prepare(
    `insert into software_deployments (id, project_id, server_id, config_id, derived_config_id, derived_at, action, status,
       status_reason, input_values, signal_transport, timeout_s, deadline_at, created_at) values (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
  );
  const event = db.prepare(
    'insert into events (project_id, time, type, resource_type, resource_id, server_id, message, data) values (?,?,?,?,?,?,?,?)',
  );
  let ms = Date.now();
  db.transaction(() => {
    for (let i = 0; i < count; i++) {
      const id = config.timeOrdered ? timeOrderedUuid(ms++) : randomUUID();
      const s = i % SIGNAL_SERVERS;
      const server = config.serverIds[s]!;
      const now = new Date().toISOString();
      const derived = randomUUID();
      const deadline = new Date(Date.now() + 3_600_000).toISOString();
      deployment.run(
        id,
        'default',
        server,
        config.configId,
        derived,
        now,
        'CREATE',
        'IN_PROGRESS',
        'Deploy data available',
        '{}',
        'HEARTH_SIGNAL',
        3600,
        deadline,
        now,
      );
      const data = JSON.stringify({
        action: 'CREATE',
        status: 'IN_PROGRESS',
        config_id: config.configId,
        derived_config_id: derived,
        timeout: 3600,
      });
      event.run(
        'default',
        now,
        'deployment.created',
        'software_deployment',
        id,
        server,
        `Deployment created: CREATE bench-signal on server ${server}`,
        data,
      );
      config.pool.push(`${id} ${s + 1}`);
    }
  })();
  db.close();
}

/** Waits (at most 8 s) for the machine to be >= 80 % idle over 1 s; returns the last idle %. */
async function idleCheck(): Promise<number> {
  const sample = () => readFileSync('/proc/stat', 'utf8').split('\n')[0]!.split(/\s+/).slice(1).map(Number);
  let idle = 0;
  for (let i = 0; i < 8 && idle < 80; i++) {
    const a = sample();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const b = sample();
    const d = b.map((v, j) => v - a[j]!);
    idle = (100 * (d[3]! + d[4]!)) / d.reduce((x, y) => x + y, 0);
  }
  return idle;
}

/** utime + stime of a process: its main thread alone, and all its threads. */
function cpuTicks(pid: number): { main: number; all: number } {
  let main = 0;
  let all = 0;
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    all += ticks;
    if (Number(task) === pid) main = ticks;
  }
  return { main, all };
}

async function run(config: Config, seconds: number, label: string): Promise<void> {
  const source = config.file ? config : configs[0]!;
  const idsFile = join(dir, `ids-${configs.indexOf(config)}.txt`);
  writeFileSync(idsFile, `${source.tokens.join(' ')}\n${source.pool.join('\n')}\n`);
  const idle = await idleCheck();
  const before = cpuTicks(config.child.pid!);
  const lua = join(BENCH, 'lua/signal.lua');
  const out = execFileSync(
    'wrk',
    ['-t1', '-c64', `-d${seconds}s`, '--timeout', '5s', '-s', lua, config.url, '--', idsFile, join(dir, 'body'), '1'],
    {
      encoding: 'utf8',
    },
  );
  const after = cpuTicks(config.child.pid!);
  const result = JSON.parse(/BENCH_JSON (\{.*\})/.exec(out)![1]!) as {
    requests: number;
    duration_us: number;
    statuses: Record<string, number>;
    latency_us: { p50: number; p99: number };
    ids_used: number;
    ids_exhausted: number;
  };
  if (config.file) config.pool.splice(0, result.ids_used);
  const rate = result.requests / (result.duration_us / 1e6);
  const bad = result.requests - (result.statuses['200'] ?? 0) + (config.file ? result.ids_exhausted : 0);
  const perRequest = (ticks: number) => ((ticks * 10_000) / result.requests).toFixed(0).padStart(4);
  console.log(
    `${label.padEnd(5)} ${config.name.padEnd(34)} ${rate.toFixed(0).padStart(6)}/s  p50 ${(result.latency_us.p50 / 1000).toFixed(1).padStart(5)} ms` +
      `  p99 ${(result.latency_us.p99 / 1000).toFixed(0).padStart(4)} ms  bad ${bad}  CPU µs/req: main thread ${perRequest(after.main - before.main)},` +
      ` process ${perRequest(after.all - before.all)}  (idle before ${idle.toFixed(0)} %)`,
  );
  if (label !== 'warm') config.rates.push(rate);
}

const configs: Config[] = [];
try {
  writeFileSync(join(dir, 'body'), SIGNAL_BODY);
  for (const [i, build] of builds.entries()) {
    const [root, mode] = build.split(':');
    const dataDir = join(dir, `data-${i}`);
    const config = await start(
      `${i}:${root}${mode ? ` (${mode} ids)` : ''}`,
      join(root!, 'test/bench/servers/hearth.ts'),
      [dataDir],
      mode === 'time-ordered',
    );
    config.file = join(dataDir, 'hearth.db');
    configs.push(config);
    for (let s = 0; s < SIGNAL_SERVERS; s++) {
      const created = await operator<{ server: { id: string }; credential: { token: string } }>(
        config.url,
        'POST',
        '/v1/default/servers',
        { name: `bench-signal-${s}` },
        201,
      );
      config.tokens.push(created.credential.token);
      config.serverIds.push(created.server.id);
    }
    const body = { name: 'bench-signal', group: 'script', config: 'echo ok', outputs: [{ name: 'result' }] };
    config.configId = (
      await operator<{ software_config: { id: string } }>(config.url, 'POST', '/v1/default/software_configs', body, 200)
    ).software_config.id;
  }
  closeSetupClient();
  configs.push(await start('no-DB baseline', join(BENCH, 'servers/signal-baseline.ts'), [], false));
  const refill = () => {
    for (const config of configs) if (config.file && config.pool.length < TOP_UP) addDeployments(config, TOP_UP);
  };
  refill();
  for (const config of configs) await run(config, 3, 'warm');
  for (let round = 1; round <= ROUNDS; round++) {
    refill();
    for (let i = 0; i < configs.length; i++) await run(configs[(i + round - 1) % configs.length]!, SECONDS, `r${round}`);
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const baseline = configs.at(-1)!;
  for (const config of configs.slice(0, -1)) {
    const ratios = config.rates.map((rate, i) => rate / baseline.rates[i]!);
    console.log(
      `${config.name}: median ${median(config.rates).toFixed(0)}/s; / baseline per round [${ratios.map((r) => r.toFixed(2)).join(' ')}], median ${median(ratios).toFixed(2)}`,
    );
  }
} finally {
  for (const config of configs) config.child.stdin!.end();
  await Promise.all(
    configs.map((config) =>
      config.child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => config.child.once('exit', resolve)),
    ),
  );
  rmSync(dir, { recursive: true, force: true });
}
