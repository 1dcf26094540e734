// The benchmark's PostgreSQL: a throwaway cluster on 127.0.0.1 made durable (fsync, synchronous
// commit and full-page writes on, unlike the test clusters), one database per store config, the
// CPU of all its processes, and WAL/transaction counters read around each run.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startPostgres, type PostgresCluster } from '../helpers/postgres.ts';

/** The settings that make every acknowledged commit survive power loss (PostgreSQL's defaults). */
export const DURABLE_SETTINGS: Readonly<Record<string, string>> = {
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
};

/** Settings read back from the running cluster and recorded with the results. */
const REPORTED_SETTINGS = [
  'server_version',
  ...Object.keys(DURABLE_SETTINGS),
  'wal_sync_method',
  'commit_delay',
  'shared_buffers',
  'max_wal_size',
];

/** A started durable cluster with one database per name, and a connection for the counters. */
export interface BenchPostgres {
  cluster: PostgresCluster;
  /** `postgres://...` URL of each database created, by name. */
  urls: Record<string, string>;
  /** The settings in REPORTED_SETTINGS as the server reports them. */
  settings: Record<string, string>;
  /** The counters now (cluster-wide; only one config runs at a time). */
  counters(): Promise<PgCounters>;
  /** The statements that took the most time (pg_stat_statements, when BENCH_PG_SETTINGS preloads it), else undefined. */
  statements(limit: number): Promise<TopStatement[] | undefined>;
  /** Rows in `signals` and deployments still IN_PROGRESS in one database. */
  signalRows(database: string): Promise<{ signals: number; inProgress: number }>;
  /** Closes the counters' connection, stops the cluster and removes its files. */
  stop(): Promise<void>;
}

/** One line of pg_stat_statements: what a statement cost over the whole run (warm-ups and fixtures included). */
export interface TopStatement {
  database: string;
  query: string;
  calls: number;
  total_ms: number;
  mean_ms: number;
  plan_ms: number;
  rows: number;
}

/** Cumulative cluster counters; subtract two readings to get a run's share. */
export interface PgCounters {
  /** Transaction ids assigned so far: one per write transaction (exact, read with pg_current_xact_id). */
  xid: number;
  /** Bytes of WAL written so far (exact, from pg_current_wal_lsn). */
  walBytes: number;
  /** WAL flushes (fdatasync) so far, from pg_stat_wal (statistics reach it within ~1 s). */
  walSyncs: number;
}

/**
 * Starts a durable cluster on a free loopback port and creates `databases` in it. `extraSettings`
 * (diagnostics, e.g. shared_preload_libraries=pg_stat_statements) go over DURABLE_SETTINGS, which
 * they may not change.
 */
export async function startBenchPostgres(databases: string[], extraSettings: Record<string, string> = {}): Promise<BenchPostgres> {
  const cluster = await startPostgres({ settings: { ...extraSettings, ...DURABLE_SETTINGS } });
  const client = new pg.Client({ connectionString: cluster.url, application_name: 'hearth-bench' });
  try {
    await client.connect();
    const urls: Record<string, string> = {};
    for (const name of databases) {
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)}`);
      urls[name] = `postgres://postgres@127.0.0.1:${cluster.port}/${name}`;
    }
    const settings: Record<string, string> = {};
    for (const name of REPORTED_SETTINGS) {
      const { rows } = await client.query<{ setting: string }>('select current_setting($1) as setting', [name]);
      settings[name] = rows[0]!.setting;
    }
    const statementsOn = /pg_stat_statements/.test(extraSettings.shared_preload_libraries ?? '');
    if (statementsOn) await client.query('CREATE EXTENSION pg_stat_statements');
    for (const [name, wanted] of Object.entries(DURABLE_SETTINGS)) {
      if (settings[name] !== wanted) throw new Error(`the bench cluster runs with ${name}=${settings[name]}, not ${wanted}`);
    }
    return {
      cluster,
      urls,
      settings,
      async counters() {
        const { rows } = await client.query<{ xid: string; lsn: string; syncs: string }>(
          `select pg_current_xact_id()::text as xid, (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as lsn, wal_sync::text as syncs from pg_stat_wal`,
        );
        const row = rows[0]!;
        return { xid: Number(row.xid), walBytes: Number(row.lsn), walSyncs: Number(row.syncs) };
      },
      async statements(limit) {
        if (!statementsOn) return undefined;
        const { rows } = await client.query<TopStatement>(
          `select d.datname as database, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 160) as query, s.calls::int as calls,
                  round(s.total_exec_time::numeric, 1)::float as total_ms, round(s.mean_exec_time::numeric, 3)::float as mean_ms,
                  round(s.total_plan_time::numeric, 1)::float as plan_ms, s.rows::int as rows
             from pg_stat_statements s join pg_database d on d.oid = s.dbid
            where d.datname <> 'postgres' order by s.total_exec_time desc limit $1`,
          [limit],
        );
        return rows;
      },
      async signalRows(database) {
        const db = new pg.Client({ connectionString: urls[database], application_name: 'hearth-bench' });
        await db.connect();
        try {
          const { rows } = await db.query<{ signals: string; in_progress: string }>(
            `select (select count(*) from signals)::text as signals,
                    (select count(*) from software_deployments where status = 'IN_PROGRESS')::text as in_progress`,
          );
          return { signals: Number(rows[0]!.signals), inProgress: Number(rows[0]!.in_progress) };
        } finally {
          await db.end();
        }
      },
      async stop() {
        await client.end().catch(() => undefined);
        await cluster.stop();
      },
    };
  } catch (error) {
    await client.end().catch(() => undefined);
    await cluster.stop();
    throw error;
  }
}

/** The postmaster's pid, from its pid file (undefined when it is not running). */
function postmasterPid(cluster: PostgresCluster): number | undefined {
  try {
    const pid = Number(readFileSync(join(cluster.dir, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    return pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * CPU of the whole cluster so far, in jiffies: the postmaster's own and its reaped children's
 * (utime, stime, cutime, cstime) plus its live children's (utime, stime). The difference of two
 * readings stays right when backends come and go between them.
 */
export function clusterJiffies(cluster: PostgresCluster): number {
  const root = postmasterPid(cluster);
  if (root === undefined) return 0;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fields: string[];
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    } catch {
      continue; // gone meanwhile
    }
    const pid = Number(entry);
    // After the command: state, ppid, ..., utime (11), stime (12), cutime (13), cstime (14).
    if (pid === root) total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    else if (Number(fields[1]) === root) total += Number(fields[11]) + Number(fields[12]);
  }
  return total;
}

/** Whether a process exists and is not a zombie. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Last-resort stop for exit paths that cannot wait for pg_ctl (Ctrl-C, the watchdog): SIGQUIT to
 * the postmaster (an immediate shutdown), a bounded wait for it to go, then the files go.
 */
export function stopClusterNow(cluster: PostgresCluster): void {
  const pid = postmasterPid(cluster);
  if (pid !== undefined) {
    try {
      process.kill(pid, 'SIGQUIT');
    } catch {
      // already gone
    }
    const until = Date.now() + 10_000;
    while (alive(pid) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
  }
  rmSync(cluster.dir, { recursive: true, force: true });
}

/**
 * A detached guard process that stops the cluster (SIGQUIT to the postmaster) and removes it and
 * `dirs` once process `ownerPid` is gone, however it went (Ctrl-C while the event loop was busy,
 * tsx's SIGKILL 60 ms after relaying a signal, a crash), or after `maxSeconds` in any case. After a
 * normal end it finds nothing left to do.
 */
export function guardCluster(cluster: PostgresCluster, ownerPid: number, dirs: string[], maxSeconds: number): void {
  const script = [
    'owner=$1; pidfile=$2; max=$3; shift 3',
    'i=0; while [ $i -lt $max ] && kill -0 $owner 2>/dev/null; do sleep 1; i=$((i+1)); done',
    'if [ -f "$pidfile" ]; then',
    '  pid=$(head -n 1 "$pidfile"); kill -QUIT "$pid" 2>/dev/null',
    '  j=0; while [ $j -lt 100 ] && kill -0 "$pid" 2>/dev/null; do sleep 0.1; j=$((j+1)); done',
    'fi',
    'rm -rf "$@"',
  ].join('\n');
  const pidFile = join(cluster.dir, 'data', 'postmaster.pid');
  const args = ['-c', script, 'bench-pg-guard', String(ownerPid), pidFile, String(maxSeconds), cluster.dir, ...dirs];
  spawn('sh', args, { detached: true, stdio: 'ignore' }).unref();
}
