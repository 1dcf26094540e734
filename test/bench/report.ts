// The report: per-config summaries over the rounds, ratios between configs, and the tables.
import type { PgRun, RunResult } from './measure.ts';

export const median = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
export const fmtRate = (n: number) =>
  n >= 10_000 ? `${(n / 1000).toFixed(1)}k` : n >= 1000 ? `${(n / 1000).toFixed(2)}k` : String(Math.round(n));
export const fmtMs = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));
const fmtOpt = (n: number | null, suffix = '') => (n === null || Number.isNaN(n) ? '-' : `${n}${suffix}`);

export interface ReplicaSummary {
  port: number;
  rps_median: number;
  rps_min: number;
  rps_max: number;
  p50_ms_median: number;
  p99_ms_median: number;
  bad_total: number;
  server_cpu_pct_median: number;
  server_us_per_req_median: number;
  server_rss_mb_max: number;
}

/** One config over all its rounds. */
export interface Summary {
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
  db_cpu_pct_median: number | null;
  db_us_per_req_median: number | null;
  server_rss_mb_max: number;
  wrk_cpu_pct_median: number;
  other_cpu_pct_median: number;
  replicas?: ReplicaSummary[];
  pg?: { write_xacts_per_req_median: number; reqs_per_wal_sync_median: number | null; wal_bytes_per_req_median: number };
}

const medianOrNull = (values: Array<number | null>) => {
  const present = values.filter((v): v is number => v !== null && !Number.isNaN(v));
  return present.length === 0 ? null : median(present);
};

/** Medians (and extremes) of one config's runs. */
export function summarise(config: string, runs: RunResult[]): Summary {
  const mine = runs.filter((r) => r.config === config);
  const rates = mine.map((r) => r.rps);
  const replicaCount = mine[0]?.replicas?.length ?? 0;
  const pgRuns = mine.map((r) => r.pg).filter((p): p is PgRun => p !== undefined);
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
    db_cpu_pct_median: medianOrNull(mine.map((r) => r.cpu.db_pct)),
    db_us_per_req_median: medianOrNull(mine.map((r) => r.db_us_per_req)),
    server_rss_mb_max: Math.max(...mine.map((r) => r.server_rss_mb)),
    wrk_cpu_pct_median: median(mine.map((r) => r.cpu.wrk_pct)),
    other_cpu_pct_median: median(mine.map((r) => r.cpu.other_pct)),
    ...(replicaCount > 1
      ? {
          replicas: Array.from({ length: replicaCount }, (_, i) => {
            const parts = mine.map((r) => r.replicas![i]!);
            return {
              port: parts[0]!.port,
              rps_median: Math.round(median(parts.map((p) => p.rps))),
              rps_min: Math.min(...parts.map((p) => p.rps)),
              rps_max: Math.max(...parts.map((p) => p.rps)),
              p50_ms_median: median(parts.map((p) => p.p50_ms)),
              p99_ms_median: median(parts.map((p) => p.p99_ms)),
              bad_total: parts.reduce((a, p) => a + p.bad, 0),
              server_cpu_pct_median: median(parts.map((p) => p.server_pct)),
              server_us_per_req_median: median(parts.map((p) => p.server_us_per_req)),
              server_rss_mb_max: Math.max(...parts.map((p) => p.server_rss_mb)),
            };
          }),
        }
      : {}),
    ...(pgRuns.length > 0
      ? {
          pg: {
            write_xacts_per_req_median: median(pgRuns.map((p) => p.write_xacts_per_req)),
            reqs_per_wal_sync_median: medianOrNull(pgRuns.map((p) => p.reqs_per_wal_sync)),
            wal_bytes_per_req_median: Math.round(median(pgRuns.map((p) => p.wal_bytes_per_req))),
          },
        }
      : {}),
  };
}

/** One config's rate over another's. */
export interface Ratio {
  name: string;
  numerator: string;
  denominator: string;
  /** Median of the per-round ratios (each round's pair ran in the same round): the headline. */
  paired_median: number;
  paired_min: number;
  paired_max: number;
  /** Ratio of the two medians, for reference. */
  of_medians: number;
  /** The goal, or null for a comparison without one. */
  goal: number | null;
  meets_goal: boolean | null;
}

/** `numerator`'s rate over `denominator`'s, per round (the headline is their median) and of the medians. */
export function ratio(name: string, numerator: string, denominator: string, runs: RunResult[], goal: number | null): Ratio {
  const perRound: number[] = [];
  const rounds = Math.max(0, ...runs.map((r) => r.round));
  for (let round = 1; round <= rounds; round++) {
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
    meets_goal: goal === null ? null : paired >= goal,
  };
}

/** Columns padded to their widest cell; the first column left-aligned, the others right-aligned. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r, ri) => r.map((c, i) => (i === 0 || ri === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')).join('\n');
}

/** The main table: one row per config, plus one per replica under a two-replica config. */
export function resultsTable(summaries: Summary[]): string {
  const rows = [
    [
      'config',
      'req/s median',
      '[min-max]',
      'p50 ms',
      'p99 ms',
      'non-expected',
      'server CPU',
      'µs CPU/req',
      'DB CPU',
      'DB µs/req',
      'wrk CPU',
      'other CPU',
      'RSS MB',
    ],
  ];
  for (const s of summaries) {
    rows.push([
      s.config,
      fmtRate(s.rps_median),
      `[${fmtRate(s.rps_min)}-${fmtRate(s.rps_max)}]`,
      fmtMs(s.p50_ms_median),
      fmtMs(s.p99_ms_median),
      String(s.bad_total),
      `${s.server_cpu_pct_median} %`,
      String(s.server_us_per_req_median),
      fmtOpt(s.db_cpu_pct_median, ' %'),
      fmtOpt(s.db_us_per_req_median),
      `${s.wrk_cpu_pct_median} %`,
      `${s.other_cpu_pct_median} %`,
      String(s.server_rss_mb_max),
    ]);
    for (const [i, r] of (s.replicas ?? []).entries()) {
      rows.push([
        `  replica ${String.fromCharCode(65 + i)} (:${r.port})`,
        fmtRate(r.rps_median),
        `[${fmtRate(r.rps_min)}-${fmtRate(r.rps_max)}]`,
        fmtMs(r.p50_ms_median),
        fmtMs(r.p99_ms_median),
        String(r.bad_total),
        `${r.server_cpu_pct_median} %`,
        String(r.server_us_per_req_median),
        '',
        '',
        '',
        '',
        String(r.server_rss_mb_max),
      ]);
    }
  }
  return table(rows);
}

/** What PostgreSQL did per request, for the PostgreSQL configs. */
export function pgTable(summaries: Summary[]): string {
  const rows = [['config', 'write xacts/req', 'req per WAL flush', 'WAL B/req']];
  for (const s of summaries) {
    if (!s.pg) continue;
    rows.push([
      s.config,
      String(s.pg.write_xacts_per_req_median),
      fmtOpt(s.pg.reqs_per_wal_sync_median),
      String(s.pg.wal_bytes_per_req_median),
    ]);
  }
  return table(rows);
}
