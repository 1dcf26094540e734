// hearth benchmarks: `npm run bench` (= tsx test/bench/run.ts). See test/bench/README.md.
//
// In one run, side by side, with rounds interleaved across configs (compare only within one run:
// shared/reference/performance.md measured ±25-45 % run-to-run host noise on this machine):
//   1. metadata: authenticated GET /v1/guest/metadata answered 304, hearth vs a bare fastify route;
//   2. signals: durable first signals of IN_PROGRESS deployments, hearth vs the same route without
//      the database (servers/signal-baseline.ts says exactly what that baseline contains);
//   3. stores: both of those on hearth with SQLite, with one PostgreSQL replica, and with two
//      PostgreSQL replicas sharing one database (loaded at once, one wrk each; rates summed). The
//      PostgreSQL cluster is durable (fsync, synchronous_commit, full_page_writes on).
// Every server is its own `node --import tsx` process on 127.0.0.1; wrk (Debian) is the client.
// Only 127.0.0.1 is contacted. Everything is bounded in time; the temp dirs and the cluster go.
//
// Usage: tsx test/bench/run.ts [--only metadata|signals|stores[,...]]   (default: everything)
// Knobs (env): BENCH_ROUNDS (3), BENCH_DURATION_S (8), BENCH_CONNECTIONS (64), BENCH_WARMUP_S (5),
// BENCH_IDLE_TARGET (80 = % idle wanted before each run), BENCH_IDLE_WAIT_S (8 = longest wait for it),
// BENCH_CPU_PROF=1 (round 1 of every config is CPU-profiled inside its servers; the .cpuprofile
// files go next to the results), BENCH_ONLY (same as --only), BENCH_INITIAL_DEPLOYMENTS (30000),
// BENCH_WATCHDOG_S (1500).

import { spawnSync } from 'node:child_process';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { postgresUnavailable } from '../helpers/postgres.ts';
import {
  SIGNAL_BODY,
  SIGNAL_SERVERS,
  SignalPool,
  agentTokens,
  closeSetupClient,
  createMetaFixture,
  http,
  type MetaFixture,
} from './fixtures.ts';
import { THREADS, idlePercent, measure, pgRun, toResult, waitForIdle, type Load, type PgRun, type RunResult } from './measure.ts';
import { fmtMs, fmtRate, pgTable, ratio, resultsTable, summarise, table } from './report.ts';
import { killChildren, startServer, stopServer, toggleProfile, type ServerProc } from './processes.ts';
import { clusterJiffies, guardCluster, startBenchPostgres, stopClusterNow, type BenchPostgres } from './postgres.ts';

// ---------------------------------------------------------------------------------------------
// Settings

const BENCH_DIR = new URL('.', import.meta.url).pathname;
const num = (name: string, fallback: number) => {
  const value = process.env[name];
  return value === undefined || value === '' ? fallback : Number(value);
};
const ROUNDS = num('BENCH_ROUNDS', 3);
const DURATION_S = num('BENCH_DURATION_S', 8);
const CONNECTIONS = num('BENCH_CONNECTIONS', 64);
const WARMUP_S = num('BENCH_WARMUP_S', 5);
const IDLE_TARGET = num('BENCH_IDLE_TARGET', 80);
const IDLE_WAIT_S = num('BENCH_IDLE_WAIT_S', 8);
const CPU_PROF = process.env.BENCH_CPU_PROF === '1';
/** The whole run is killed after this (servers and cluster included): the bench must always stop by itself. */
const WATCHDOG_MS = num('BENCH_WATCHDOG_S', 1500) * 1000;
/** Deployments created per store before its first signal run; topped up between runs as needed. */
const INITIAL_DEPLOYMENTS = num('BENCH_INITIAL_DEPLOYMENTS', 30_000);
/** Diagnostics: extra PostgreSQL settings, `name=value,...` (pg_stat_statements in shared_preload_libraries is reported). */
const PG_SETTINGS = Object.fromEntries(
  (process.env.BENCH_PG_SETTINGS ?? '')
    .split(',')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')).trim(), pair.slice(pair.indexOf('=') + 1).trim()]),
);
/** After a PostgreSQL run, wait this long before reading pg_stat_wal (backends report within ~1 s). */
const PG_STATS_SETTLE_MS = 1200;
const GOAL_META = 0.8;
const GOAL_SIGNAL = 0.7;

const startedAt = new Date();
const log = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// What runs: configs, the stores behind them, and --only

type StoreKind = 'sqlite' | 'pg-x1' | 'pg-x2';
type Bench = 'meta' | 'signal';

interface ConfigDef {
  name: string;
  bench: Bench;
  /** A hearth store, or one of the bench's baseline servers (hearth-no-db: hearth with the signal's write removed). */
  target: StoreKind | 'baseline' | 'hearth-no-db';
  /** The --only groups that include it. */
  groups: ReadonlyArray<'metadata' | 'signals' | 'stores'>;
}

const CONFIGS = {
  metaHearth: 'meta-304/hearth-sqlite',
  metaBare: 'meta-304/bare-fastify',
  metaPg1: 'meta-304/hearth-pg-x1',
  metaPg2: 'meta-304/hearth-pg-x2',
  sigHearth: 'signal/hearth-sqlite',
  sigNoDb: 'signal/hearth-no-db',
  sigBase: 'signal/bare-route',
  sigPg1: 'signal/hearth-pg-x1',
  sigPg2: 'signal/hearth-pg-x2',
} as const;

/** Every config, in the order of round 1. */
const CONFIG_DEFS: ConfigDef[] = [
  { name: CONFIGS.metaHearth, bench: 'meta', target: 'sqlite', groups: ['metadata', 'stores'] },
  { name: CONFIGS.metaBare, bench: 'meta', target: 'baseline', groups: ['metadata'] },
  { name: CONFIGS.metaPg1, bench: 'meta', target: 'pg-x1', groups: ['stores'] },
  { name: CONFIGS.metaPg2, bench: 'meta', target: 'pg-x2', groups: ['stores'] },
  { name: CONFIGS.sigHearth, bench: 'signal', target: 'sqlite', groups: ['signals', 'stores'] },
  { name: CONFIGS.sigNoDb, bench: 'signal', target: 'hearth-no-db', groups: ['signals'] },
  { name: CONFIGS.sigBase, bench: 'signal', target: 'baseline', groups: ['signals'] },
  { name: CONFIGS.sigPg1, bench: 'signal', target: 'pg-x1', groups: ['stores'] },
  { name: CONFIGS.sigPg2, bench: 'signal', target: 'pg-x2', groups: ['stores'] },
];

const STORE_LABELS: Record<StoreKind, string> = {
  sqlite: 'SQLite, one server',
  'pg-x1': 'PostgreSQL, one replica',
  'pg-x2': 'PostgreSQL, two replicas sharing one database',
};
const STORE_DATABASES: Record<StoreKind, string | undefined> = { sqlite: undefined, 'pg-x1': 'hearth_x1', 'pg-x2': 'hearth_x2' };
const GROUP_ALIASES: Record<string, 'metadata' | 'signals' | 'stores'> = {
  metadata: 'metadata',
  meta: 'metadata',
  signals: 'signals',
  signal: 'signals',
  stores: 'stores',
};

/** The configs `--only a,b` (or BENCH_ONLY) selects; all of them without it. Exits 64 on a bad value. */
function selectConfigs(argv: string[]): { configs: ConfigDef[]; only: string } {
  let only = process.env.BENCH_ONLY ?? '';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--only') only = argv[++i] ?? '';
    else if (arg.startsWith('--only=')) only = arg.slice('--only='.length);
    else {
      log(`bench: unknown argument ${JSON.stringify(arg)}; usage: tsx test/bench/run.ts [--only metadata|signals|stores[,...]]`);
      process.exit(64);
    }
  }
  if (!only) return { configs: CONFIG_DEFS, only: '' };
  const groups = only.split(',').map((word) => {
    const group = GROUP_ALIASES[word.trim()];
    if (!group) {
      log(`bench: --only ${JSON.stringify(word)} is not a benchmark; use metadata, signals or stores (comma-separated for several)`);
      process.exit(64);
    }
    return group;
  });
  return { configs: CONFIG_DEFS.filter((c) => c.groups.some((g) => groups.includes(g))), only: groups.join(',') };
}

// ---------------------------------------------------------------------------------------------
// Every way out stops the servers, wrk and the cluster

/** The bench's PostgreSQL, once started. */
let postgres: BenchPostgres | undefined;
/** The run's temp dir (data dirs, ids files), once made. */
let tmpDir: string | undefined;

/** Kills every child and stops the cluster at once (exit paths that cannot wait). */
function killAll(): void {
  killChildren();
  if (postgres) {
    stopClusterNow(postgres.cluster);
    postgres = undefined;
  }
  if (tmpDir) rmSync(tmpDir, { recursive: true, force: true });
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

// ---------------------------------------------------------------------------------------------
// Report

/** The ratios reported (those whose two configs both ran): the goals first, then the store comparisons. */
const RATIO_SPECS: Array<[string, string, string, number | null]> = [
  ['metadata 304: hearth (SQLite) / bare fastify', CONFIGS.metaHearth, CONFIGS.metaBare, GOAL_META],
  ['signals: hearth (SQLite) / hearth with the write removed', CONFIGS.sigHearth, CONFIGS.sigNoDb, GOAL_SIGNAL],
  ['signals: hearth (SQLite) / bare signal route', CONFIGS.sigHearth, CONFIGS.sigBase, null],
  ['signals: hearth with the write removed / bare signal route', CONFIGS.sigNoDb, CONFIGS.sigBase, null],
  ['metadata 304: hearth (PG x1) / bare fastify', CONFIGS.metaPg1, CONFIGS.metaBare, GOAL_META],
  ['signals: hearth (PG x1) / hearth with the write removed', CONFIGS.sigPg1, CONFIGS.sigNoDb, GOAL_SIGNAL],
  ['metadata 304: PG x1 / SQLite', CONFIGS.metaPg1, CONFIGS.metaHearth, null],
  ['metadata 304: PG x2 / PG x1', CONFIGS.metaPg2, CONFIGS.metaPg1, null],
  ['signals: PG x1 / SQLite', CONFIGS.sigPg1, CONFIGS.sigHearth, null],
  ['signals: PG x2 / PG x1', CONFIGS.sigPg2, CONFIGS.sigPg1, null],
];

// ---------------------------------------------------------------------------------------------
// Main

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

/** One hearth deployment under test: its replicas, its database, and its fixtures. */
interface StoreTarget {
  kind: StoreKind;
  replicas: ServerProc[];
  /** The SQLite data dir, or the PostgreSQL database name. */
  dataDir: string;
  database?: string;
  meta?: MetaFixture;
  signals?: SignalPool;
}

async function main(): Promise<void> {
  const { configs: selected, only } = selectConfigs(process.argv.slice(2));
  if (spawnSync('wrk', ['-v']).error) {
    log("bench: wrk is not installed. Install Debian's: apt-get update && apt-get install -y wrk");
    process.exit(1);
  }
  const kinds = (['sqlite', 'pg-x1', 'pg-x2'] as const).filter((k) => selected.some((c) => c.target === k));
  const pgKinds = kinds.filter((k) => k !== 'sqlite');
  if (pgKinds.length > 0) {
    const reason = postgresUnavailable();
    if (reason) {
      log(`bench: the PostgreSQL configs need a local cluster: ${reason}. Without them: tsx test/bench/run.ts --only metadata,signals`);
      process.exit(1);
    }
  }
  const has = (name: string) => selected.some((c) => c.name === name);
  const machine = machineInfo();
  log(`hearth benchmarks ${startedAt.toISOString()}`);
  log(
    `machine: ${machine.cpus} vCPU ${machine.cpu_model}, ${machine.memory_gib} GiB, node ${machine.node}, ${machine.wrk}, load ${machine.loadavg.join(' ')}`,
  );
  log(
    `plan: ${ROUNDS} rounds x ${selected.length} configs${only ? ` (--only ${only})` : ''} x ${DURATION_S} s, wrk -t${THREADS} -c${CONNECTIONS}` +
      `${kinds.includes('pg-x2') ? ` (two replicas: one wrk -c${CONNECTIONS / 2} each, at once)` : ''}, interleaved; ${WARMUP_S} s warm-up each`,
  );
  const idleAtStart = await idlePercent();
  log(
    `idle check: ${idleAtStart.toFixed(0)} % idle over 1 s (target before each run: >= ${IDLE_TARGET} %, waiting at most ${IDLE_WAIT_S} s)`,
  );

  const tmp = mkdtempSync(join(tmpdir(), 'hearth-bench-'));
  tmpDir = tmp;
  const resultsDir = join(BENCH_DIR, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const serverOptions = { maxLifetimeMs: WATCHDOG_MS + 60_000, profileDir: CPU_PROF ? resultsDir : undefined };
  try {
    // --- the database and the servers ------------------------------------------------------
    const t0 = Date.now();
    if (pgKinds.length > 0) {
      postgres = await startBenchPostgres(
        pgKinds.map((k) => STORE_DATABASES[k]!),
        PG_SETTINGS,
      );
      guardCluster(postgres.cluster, process.pid, [tmp], WATCHDOG_MS / 1000 + 120);
      const s = postgres.settings;
      log(
        `PostgreSQL ${s.server_version} on 127.0.0.1:${postgres.cluster.port} (${postgres.cluster.dir}): ` +
          `fsync=${s.fsync} synchronous_commit=${s.synchronous_commit} full_page_writes=${s.full_page_writes} ` +
          `wal_sync_method=${s.wal_sync_method} commit_delay=${s.commit_delay} shared_buffers=${s.shared_buffers}` +
          (Object.keys(PG_SETTINGS).length > 0 ? `; extra: ${JSON.stringify(PG_SETTINGS)}` : ''),
      );
    }
    const hearthServer = (kind: StoreKind, replica: string, publicUrl?: string) => {
      const dataDir = join(tmp, `${kind}${replica}`);
      const database = STORE_DATABASES[kind];
      const args = database ? [dataDir, postgres!.urls[database]!] : [dataDir];
      const env: Record<string, string> = publicUrl ? { BENCH_PUBLIC_URL: publicUrl } : {};
      return startServer(`${stamp}-hearth-${kind}${replica}`, 'hearth.ts', args, { ...serverOptions, env });
    };
    const stores = new Map<StoreKind, StoreTarget>();
    await Promise.all(
      kinds.map(async (kind) => {
        // Replica B starts once A has migrated the shared database. Both tell agents A's URL, as
        // replicas behind one balancer tell them its URL: the documents, and so the ETags, are the same.
        const replicas = [await hearthServer(kind, kind === 'pg-x2' ? '-a' : '')];
        if (kind === 'pg-x2') replicas.push(await hearthServer(kind, '-b', replicas[0]!.url));
        stores.set(kind, { kind, replicas, dataDir: join(tmp, kind), database: STORE_DATABASES[kind] });
      }),
    );
    const sigBase = has(CONFIGS.sigBase)
      ? await startServer(`${stamp}-signal-baseline`, 'signal-baseline.ts', [], serverOptions)
      : undefined;
    const sigNoDb = has(CONFIGS.sigNoDb)
      ? await startServer(`${stamp}-hearth-no-db`, 'hearth-no-db-signal.ts', [join(tmp, 'hearth-no-db')], serverOptions)
      : undefined;
    /** hearth-no-db's own agents (its credential check is hearth's): their tokens replace the SQLite store's. */
    const noDbTokens = sigNoDb ? await agentTokens(sigNoDb.url, SIGNAL_SERVERS) : [];
    const store = (kind: StoreKind) => stores.get(kind)!;

    // --- metadata fixture per store: one server with two deployments -----------------------
    for (const kind of kinds) {
      if (!selected.some((c) => c.target === kind && c.bench === 'meta')) continue;
      const target = store(kind);
      target.meta = await createMetaFixture(target.replicas.map((r) => r.url));
      const distinct = new Set(target.meta.etags);
      if (distinct.size > 1) log(`note: the ${STORE_LABELS[kind]} send different ETags for the same document: ${[...distinct].join(' ')}`);
    }
    let metaBare: ServerProc | undefined;
    if (has(CONFIGS.metaBare)) {
      const meta = store('sqlite').meta!;
      const metaBodyFile = join(tmp, 'metadata.json');
      writeFileSync(metaBodyFile, meta.document);
      metaBare = await startServer(`${stamp}-bare-meta`, 'bare-meta.ts', [metaBodyFile, meta.etags[0]!], serverOptions);
      const bareCheck = await http('GET', `${metaBare.url}/v1/guest/metadata`, {
        authorization: meta.auth,
        'if-none-match': meta.etags[0]!,
      });
      if (bareCheck.status !== 304) throw new Error(`bare server answered ${bareCheck.status}, not 304`);
    }
    const serverList = [...stores.values()].flatMap((s) => s.replicas).concat(metaBare ?? [], sigBase ?? [], sigNoDb ?? []);
    log(
      `servers up in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${serverList.map((s) => `${s.name.slice(stamp.length + 1)} :${s.port}`).join(', ')}` +
        (stores.get('sqlite')?.meta
          ? `; metadata document ${stores.get('sqlite')!.meta!.document.length} B, ETag ${stores.get('sqlite')!.meta!.etags[0]}`
          : ''),
    );

    // --- signal fixture per store: agent servers, one config, a pool of IN_PROGRESS deployments
    for (const kind of kinds) {
      if (!selected.some((c) => c.target === kind && c.bench === 'signal')) continue;
      const target = store(kind);
      target.signals = await SignalPool.create(target.replicas[0]!.url);
      await target.signals.createDeployments(INITIAL_DEPLOYMENTS);
      log(
        `${STORE_LABELS[kind]}: created ${INITIAL_DEPLOYMENTS} IN_PROGRESS deployments over ${SIGNAL_SERVERS} servers in ${target.signals.createSeconds.toFixed(1)} s ` +
          `(${Math.round(INITIAL_DEPLOYMENTS / target.signals.createSeconds)}/s through the operator API)`,
      );
    }
    const signalBodyFile = join(tmp, 'signal.json');
    writeFileSync(signalBodyFile, SIGNAL_BODY);

    // --- what one run of each config is -----------------------------------------------------
    const metaPath = '/v1/guest/metadata';
    const profiles: string[] = [];
    const profiled = async <T>(servers: ServerProc[], config: string, round: number, run: () => Promise<T>): Promise<T> => {
      if (!CPU_PROF || round !== 1) return run();
      for (const server of servers) await toggleProfile(server, true);
      try {
        return await run();
      } finally {
        for (const [i, server] of servers.entries()) {
          await toggleProfile(server, false);
          const written = server.profiles.pop();
          if (written) {
            const suffix = servers.length > 1 ? `-${String.fromCharCode(97 + i)}` : '';
            const named = join(resultsDir, `${stamp}-${config.replace(/\//g, '_')}${suffix}.cpuprofile`);
            renameSync(written, named);
            profiles.push(named);
          }
        }
      }
    };
    /** Ids files for `parts` wrk processes, topped up so that none can run out. */
    const prepareSignals = async (pool: SignalPool, seconds: number, parts: number, tokens?: string[]): Promise<string[]> => {
      // Enough for twice the best total rate seen (at least 12,000/s, so that the first warm-up, with no
      // rate seen yet, does not run out at the ~17k/s SQLite reaches here; a warm-up can run at half the
      // rate of the round after it, and a list that runs out spoils the round) plus 2,000; x2 with one
      // wrk, x1 for each of two (twice its share, however the load splits).
      const perPart = Math.ceil(Math.max(pool.maxRate, 12_000) * seconds * (parts > 1 ? 1 : 2)) + 2000;
      const start = Date.now();
      const added = await pool.ensure(parts, perPart);
      if (added > 0) log(`  (created ${added} more deployments in ${((Date.now() - start) / 1000).toFixed(1)} s)`);
      const files = Array.from({ length: parts }, (_, i) => join(tmp, `ids-${tokens ? 'no-db-' : ''}${i}.txt`));
      pool.writeIds(files, tokens);
      return files;
    };
    const runConfig = async (def: ConfigDef, seconds: number, round: number): Promise<RunResult> => {
      const hearth = def.target === 'baseline' || def.target === 'hearth-no-db' ? undefined : store(def.target);
      const servers = hearth ? hearth.replicas : [def.target === 'hearth-no-db' ? sigNoDb! : def.bench === 'meta' ? metaBare! : sigBase!];
      const connections = CONNECTIONS / servers.length;
      let loads: Load[];
      if (def.bench === 'meta') {
        const meta = (hearth ?? store('sqlite')).meta!;
        loads = servers.map((server, i) => ({
          server,
          script: 'meta.lua',
          url: `${server.url}${metaPath}`,
          headers: [`Authorization: ${meta.auth}`, `If-None-Match: ${meta.etags[i] ?? meta.etags[0]!}`],
          scriptArgs: [],
          connections,
        }));
      } else {
        // The baseline gets the SQLite store's requests (it does not consume them, but a hearth run
        // before it may have used the pool up, and wrk's script needs a non-empty list).
        const pool = (hearth ?? store('sqlite')).signals!;
        const files = await prepareSignals(pool, seconds, servers.length, def.target === 'hearth-no-db' ? noDbTokens : undefined);
        loads = servers.map((server, i) => ({
          server,
          script: 'signal.lua',
          url: server.url,
          headers: [],
          scriptArgs: [files[i]!, signalBodyFile, String(THREADS)],
          connections,
        }));
      }
      const withDb = hearth?.database !== undefined;
      const { idle } = round > 0 ? await waitForIdle(IDLE_TARGET, IDLE_WAIT_S) : { idle: NaN };
      const before = withDb ? await postgres!.counters() : undefined;
      const dbJiffies = withDb ? () => clusterJiffies(postgres!.cluster) : undefined;
      const measured = await profiled(servers, def.name, round, () => measure(loads, seconds, dbJiffies));
      let pg: PgRun | undefined;
      if (before) {
        await sleep(PG_STATS_SETTLE_MS);
        pg = pgRun(
          before,
          await postgres!.counters(),
          measured.outs.reduce((a, o) => a + o.requests, 0),
        );
      }
      const expected = { status: def.bench === 'meta' ? 304 : 200, freshIds: def.bench === 'signal' && hearth !== undefined };
      const result = toResult(def.name, round, loads, measured, expected, idle, pg);
      if (hearth && def.bench === 'signal') {
        const pool = hearth.signals!;
        pool.consume(measured.outs.map((o) => o.ids_used));
        // Signals resent after the list ran out (counted as bad) may be 200 duplicates: not new rows.
        const exhausted = measured.outs.reduce((a, o) => a + o.ids_exhausted, 0);
        pool.acks += Math.max(0, (result.statuses['200'] ?? 0) - exhausted);
        pool.maxRate = Math.max(pool.maxRate, result.rps);
      }
      return result;
    };

    // --- warm-up (JIT, caches, the first WAL growth); not recorded -------------------------
    const pad = Math.max(...selected.map((c) => c.name.length)) + 1;
    for (const def of selected) {
      const r = await runConfig(def, WARMUP_S, 0);
      log(`warm-up ${def.name.padEnd(pad)} ${fmtRate(r.rps).padStart(6)} req/s${r.bad ? `, ${r.bad} bad` : ''}`);
    }

    // --- measured rounds, interleaved; each round starts with a different config ------------
    const runs: RunResult[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const shift = (round - 1) % selected.length;
      const roundOrder = [...selected.slice(shift), ...selected.slice(0, shift)];
      for (const def of roundOrder) {
        const r = await runConfig(def, DURATION_S, round);
        runs.push(r);
        const replicas = r.replicas ? ` (${r.replicas.map((p) => fmtRate(p.rps)).join(' + ')})` : '';
        const db = r.cpu.db_pct === null ? '' : ` db ${r.cpu.db_pct} % (${r.db_us_per_req} µs/req)`;
        log(
          `round ${round} ${def.name.padEnd(pad)} ${fmtRate(r.rps).padStart(6)} req/s${replicas}  p50 ${fmtMs(r.p50_ms)} ms  p99 ${fmtMs(r.p99_ms)} ms  bad ${r.bad}  ` +
            `cpu server ${r.cpu.server_pct} % (${r.server_us_per_req} µs/req)${db} wrk ${r.cpu.wrk_pct} % other ${r.cpu.other_pct} %  (idle before ${r.idle_before} %)`,
        );
      }
    }

    // --- durability check: every 200 acknowledged is a committed signal row -----------------
    const durability: Array<{
      store: StoreKind;
      signal_acks_200: number;
      signal_rows_stored: number;
      rows_minus_acks: number;
      still_in_progress: number;
      ok: boolean;
    }> = [];
    for (const target of kinds.map(store)) {
      if (!target.signals) continue;
      let rows: { signals: number; inProgress: number };
      if (target.database) {
        rows = await postgres!.signalRows(target.database);
      } else {
        const db = new Database(join(target.dataDir, 'hearth.db'), { readonly: true, fileMustExist: true });
        rows = {
          signals: (db.prepare('select count(*) as n from signals').get() as { n: number }).n,
          inProgress: (db.prepare("select count(*) as n from software_deployments where status = 'IN_PROGRESS'").get() as { n: number }).n,
        };
        db.close();
      }
      durability.push({
        store: target.kind,
        signal_acks_200: target.signals.acks,
        signal_rows_stored: rows.signals,
        rows_minus_acks: rows.signals - target.signals.acks,
        still_in_progress: rows.inProgress,
        ok: rows.signals >= target.signals.acks,
      });
    }

    const statements = await postgres?.statements(25);
    await Promise.all(serverList.map(stopServer));

    // --- results --------------------------------------------------------------------------
    const summaries = selected.map((c) => summarise(c.name, runs));
    const ratios = RATIO_SPECS.filter(([, a, b]) => has(a) && has(b)).map(([name, a, b, goal]) => ratio(name, a, b, runs, goal));
    log('');
    log(resultsTable(summaries));
    log(
      '(medians over rounds; "non-expected" = replies other than 304 (metadata) or 200 (signals), socket errors and hearth signals\n' +
        ' resent after the id list ran out, summed over rounds;\n' +
        (pgKinds.length > 0
          ? ' hearth-pg-x1 = one PostgreSQL replica, hearth-pg-x2 = two replicas on one database loaded at once: rates summed,\n' +
            " latencies the worse replica's, CPU and RSS summed; DB = all PostgreSQL processes;\n"
          : '') +
        ' CPU in % of one vCPU; µs CPU/req = server utime+stime per reply; other = kernel softirq + foreign processes; RSS = largest after a run)',
    );
    if (summaries.some((s) => s.pg)) {
      log('');
      log(pgTable(summaries));
      log('(medians; write transactions counted exactly by transaction id; WAL flushes from pg_stat_wal, which may lag ~1 s)');
    }
    log('');
    const nameWidth = Math.max(...ratios.map((r) => r.name.length)) + 1;
    for (const r of ratios) {
      const verdict = r.goal === null ? '' : `  goal >= ${r.goal}: ${r.meets_goal ? 'met' : 'NOT met'}`;
      log(
        `${r.name.padEnd(nameWidth)} ${r.paired_median.toFixed(2)}  (per-round [${r.paired_min.toFixed(2)}-${r.paired_max.toFixed(2)}], ratio of medians ${r.of_medians.toFixed(2)})${verdict}`,
      );
    }
    for (const d of durability) {
      log(
        `durability (${STORE_LABELS[d.store]}): ${d.signal_acks_200} signals acknowledged 200 (warm-up included), ${d.signal_rows_stored} signal rows committed: ` +
          `${d.ok ? 'ok' : 'FEWER ROWS THAN ACKS'} (+${d.rows_minus_acks} in flight when wrk stopped); ${d.still_in_progress} deployments left IN_PROGRESS`,
      );
    }
    if (statements) {
      log('');
      log('pg_stat_statements, by total time (whole run: fixtures and warm-ups included):');
      log(
        table([
          ['database', 'calls', 'mean ms', 'total ms', 'plan ms', 'query'],
          ...statements.map((t) => [
            t.database,
            String(t.calls),
            String(t.mean_ms),
            String(t.total_ms),
            String(t.plan_ms),
            t.query.slice(0, 100),
          ]),
        ]),
      );
    }
    const totalBad = summaries.reduce((a, s) => a + s.bad_total, 0);

    const file = join(resultsDir, `${stamp}.json`);
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          started_at: startedAt.toISOString(),
          wall_s: Math.round((Date.now() - startedAt.getTime()) / 1000),
          command: `tsx test/bench/run.ts${only ? ` --only ${only}` : ''}`,
          settings: {
            rounds: ROUNDS,
            duration_s: DURATION_S,
            warmup_s: WARMUP_S,
            wrk: `-t${THREADS} -c${CONNECTIONS}`,
            idle_target_pct: IDLE_TARGET,
            idle_wait_max_s: IDLE_WAIT_S,
            cpu_prof: CPU_PROF,
            configs: selected.map((c) => c.name),
          },
          machine: { ...machine, idle_at_start_pct: Math.round(idleAtStart) },
          ...(postgres ? { postgres: { port: postgres.cluster.port, ...postgres.settings, extra_settings: PG_SETTINGS } } : {}),
          fixture: {
            metadata_document_bytes: stores.get('sqlite')?.meta?.document.length ?? stores.get('pg-x1')?.meta?.document.length ?? null,
            etags: Object.fromEntries([...stores.values()].map((s) => [s.kind, s.meta?.etags ?? null])),
            signal_body_bytes: SIGNAL_BODY.length,
            signal_servers: SIGNAL_SERVERS,
            deployments: Object.fromEntries(
              [...stores.values()]
                .filter((s) => s.signals)
                .map((s) => [
                  s.kind,
                  {
                    created: s.signals!.created,
                    create_rate: s.signals!.createSeconds > 0 ? Math.round(s.signals!.created / s.signals!.createSeconds) : null,
                  },
                ]),
            ),
          },
          summaries,
          ratios,
          durability,
          ...(statements ? { pg_stat_statements: statements } : {}),
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
    if (totalBad > 0 || durability.some((d) => !d.ok)) process.exitCode = 1;
  } finally {
    killChildren();
    if (postgres) {
      const running = postgres;
      await running.stop().catch((error: unknown) => {
        log(`bench: pg_ctl stop failed (${String(error)}); stopping the cluster with SIGQUIT`);
        stopClusterNow(running.cluster);
      });
      postgres = undefined;
    }
    closeSetupClient();
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
clearTimeout(watchdog);
