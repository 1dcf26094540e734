// Diagnostic (not run by `npm run bench`): the SQLite writer's side of durable signals, in one
// thread and without HTTP. It fills a fresh database like the bench (N IN_PROGRESS deployments over
// 8 servers, one config with output `result`), then runs the signal prepared write through
// executePrepared in batches, and prints the thread's CPU per signal.
// Usage: node --import tsx test/bench/tools/signal-writer.ts [count=20000] [batch=64] [deployments=30000]
// Env: WRITER_STATEMENTS=1 also prints the CPU per statement (by SQL text) and per COMMIT (it adds
// two getrusage calls per statement); WRITER_CHECKPOINTS=0 turns checkpoints off and prints the WAL
// bytes per signal; WRITER_CACHE_KIB=N sets the writer's page cache (default: the store's);
// WRITER_IDS=v7 gives the deployments time-ordered ids instead of random ones.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Migrator } from 'kysely';
import type Database from 'better-sqlite3';
import { openSqlite, executePrepared } from '../../../packages/server/src/store/sqlite.ts';
import { migrations } from '../../../packages/server/src/store/migrations.ts';
import type { PreparedCall, PreparedWriteModule } from '../../../packages/server/src/store/prepared-writes.ts';
import * as signalsModule from '../../../packages/server/src/domain/signals.ts';

const COUNT = Number(process.argv[2] ?? 20_000);
const BATCH = Number(process.argv[3] ?? 64);
const DEPLOYMENTS = Math.max(COUNT, Number(process.argv[4] ?? 30_000));
/** WRITER_IDS=v7: deployment ids that sort by creation time (UUIDv7 layout), instead of random ones. */
const timeOrderedIds = process.env.WRITER_IDS === 'v7';
/** A UUIDv7-style id: 48 bits of milliseconds, then random bits. */
function timeOrderedUuid(ms: number): string {
  const time = ms.toString(16).padStart(12, '0');
  const random = randomUUID();
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15, 18)}-${random.slice(19, 23)}-${random.slice(24)}`;
}
const dir = mkdtempSync(join(tmpdir(), 'hearth-writer-'));
const handles = openSqlite(join(dir, 'hearth.db'));
try {
  const migrated = await new Migrator({
    db: handles.writer,
    provider: { getMigrations: () => Promise.resolve(migrations('sqlite')) },
  }).migrateToLatest();
  if (migrated.error)
    throw migrated.error instanceof Error ? migrated.error : new Error(`migration failed: ${JSON.stringify(migrated.error)}`);
  const raw = handles.raw;
  if (process.env.WRITER_CACHE_KIB) raw.pragma(`cache_size = -${Number(process.env.WRITER_CACHE_KIB)}`);
  const now = new Date().toISOString();
  raw.prepare('insert into projects (id, name, created_at) values (?, ?, ?)').run('default', 'default', now);
  const configId = randomUUID();
  raw
    .prepare(
      'insert into software_configs (id, project_id, name, group_name, config, inputs, outputs, options, created_at) values (?,?,?,?,?,?,?,?,?)',
    )
    .run(configId, 'default', 'cfg', 'script', '#!/bin/sh', '[]', JSON.stringify([{ name: 'result', type: 'String' }]), '{}', now);
  const servers = Array.from({ length: 8 }, () => randomUUID());
  const insertDeployment = raw.prepare(
    `insert into software_deployments (id, project_id, server_id, config_id, derived_config_id, derived_at, action, status, status_reason,
       input_values, signal_transport, timeout_s, deadline_at, created_at) values (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
  );
  const insertCreated = raw.prepare(
    `insert into events (project_id, time, type, resource_type, resource_id, server_id, message, data) values (?,?,?,?,?,?,?,?)`,
  );
  const ids: Array<{ id: string; server: string }> = [];
  const start = Date.now();
  raw.transaction(() => {
    for (let i = 0; i < DEPLOYMENTS; i++) {
      const id = timeOrderedIds ? timeOrderedUuid(start + i) : randomUUID();
      const server = servers[i % servers.length]!;
      ids.push({ id, server });
      insertDeployment.run(
        id,
        'default',
        server,
        configId,
        randomUUID(),
        now,
        'CREATE',
        'IN_PROGRESS',
        'Deploy data available',
        JSON.stringify({ deploy_server_id: server, deploy_action: 'CREATE', deploy_signal_transport: 'HEARTH_SIGNAL' }),
        'HEARTH_SIGNAL',
        3600,
        '2999-01-01T00:00:00.000Z',
        now,
      );
      insertCreated.run('default', now, 'deployment.created', 'software_deployment', id, server, 'Deployment CREATE created', '{}');
    }
  })();
  raw.pragma('wal_checkpoint(TRUNCATE)');
  // With WRITER_CHECKPOINTS=0, no checkpoints while measuring: the WAL's size at the end is every
  // byte the commits wrote. Otherwise the store's own checkpoint setting stays.
  const noCheckpoints = process.env.WRITER_CHECKPOINTS === '0';
  if (noCheckpoints) raw.pragma('wal_autocheckpoint = 0');

  // Per-SQL CPU time: wrap every statement the writer prepares.
  const timing = new Map<string, { n: number; ms: number }>();
  const cache = new Map<string, Database.Statement>();
  const timed = (sqlText: string, statement: Database.Statement) => {
    const label = sqlText.replace(/\s+/g, ' ').slice(0, 60);
    const t = (timing.get(label) ?? timing.set(label, { n: 0, ms: 0 }).get(label))!;
    const wrap =
      <A extends unknown[], R>(fn: (...a: A) => R) =>
      (...a: A): R => {
        const t0 = process.cpuUsage();
        try {
          return fn(...a);
        } finally {
          const used = process.cpuUsage(t0);
          t.ms += (used.user + used.system) / 1000;
          t.n++;
        }
      };
    return { get: wrap(statement.get.bind(statement)), run: wrap(statement.run.bind(statement)) } as unknown as Database.Statement;
  };
  // Timing each statement costs two getrusage calls per statement: only with WRITER_STATEMENTS=1.
  const perStatement = process.env.WRITER_STATEMENTS === '1';
  const prepare = (sqlText: string) => {
    let statement = cache.get(sqlText);
    if (!statement) cache.set(sqlText, (statement = perStatement ? timed(sqlText, raw.prepare(sqlText)) : raw.prepare(sqlText)));
    return statement;
  };
  const modules = new Map<string, PreparedWriteModule>([
    [import.meta.resolve('../../../packages/server/src/domain/signals.ts'), signalsModule],
  ]);
  const moduleUrl = [...modules.keys()][0]!;
  const body = { deploy_stdout: `${'configured step ok\n'.repeat(45)}done\n`, deploy_stderr: '', deploy_status_code: 0, result: 'ok' };
  const call = (i: number): PreparedCall => {
    const { id, server } = ids[i]!;
    return {
      module: moduleUrl,
      name: 'signal',
      args: { principal: { kind: 'agent', serverId: server, projectId: 'default', accessKeyId: 'x' }, id, body, clientKey: undefined },
    };
  };
  // warm-up batch, not counted
  executePrepared(raw, prepare, modules, [call(ids.length - 1)]);
  for (const t of timing.values()) Object.assign(t, { n: 0, ms: 0 });
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let failed = 0;
  for (let i = 0; i < COUNT; i += BATCH) {
    const calls = [];
    for (let j = i; j < Math.min(i + BATCH, COUNT); j++) calls.push(call(j));
    for (const outcome of executePrepared(raw, prepare, modules, calls).outcomes) if (!outcome.ok) failed++;
  }
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const walBytes = noCheckpoints ? statSync(join(dir, 'hearth.db-wal')).size : NaN;
  console.log(
    `${COUNT} signals in batches of ${BATCH}: ${Math.round((COUNT / ms) * 1000)}/s, wall ${((ms * 1000) / COUNT).toFixed(1)} µs/signal, ` +
      `CPU ${((cpu.user + cpu.system) / COUNT).toFixed(1)} µs/signal (user ${(cpu.user / COUNT).toFixed(1)}, sys ${(cpu.system / COUNT).toFixed(1)}), failed ${failed}; ` +
      `WAL ${(walBytes / COUNT / 1024).toFixed(1)} KiB/signal (${(walBytes / 4120 / Math.ceil(COUNT / BATCH)).toFixed(0)} pages/commit)`,
  );
  for (const [label, t] of [...timing].sort((a, b) => b[1].ms - a[1].ms)) {
    console.log(
      `  ${((t.ms * 1000) / COUNT).toFixed(1).padStart(6)} µs/signal  ${((t.ms * 1000) / t.n).toFixed(1).padStart(7)} µs/run  x${t.n}  ${label}`,
    );
  }
} finally {
  await handles.writer.destroy();
  await handles.reader.destroy();
  rmSync(dir, { recursive: true, force: true });
}
