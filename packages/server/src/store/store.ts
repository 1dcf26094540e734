import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Migrator, sql, type Kysely, type Migration } from 'kysely';
import type { Database } from './schema.ts';
import { migrations, type DialectName } from './migrations.ts';
import { openSqlite } from './sqlite.ts';
import { WriterThread } from './writer-thread.ts';
import type { PreparedWrite } from './prepared-writes.ts';
import { WriteQueue, type WriteUnit } from './write-queue.ts';
import {
  idleConnectionLossReporter,
  openPostgresPool,
  POSTGRES_LIMITS,
  postgresTransactionHooks,
  runPreparedOnPostgres,
  sessionSettingsSql,
  type PostgresLimits,
} from './postgres.ts';
import { FeedListener } from './postgres-feed.ts';
import { checkPostgresPrivileges, checkPostgresSettings } from './postgres-checks.ts';
import { HearthError } from '../domain/errors.ts';

/** Where the store lives: a SQLite file in the data dir, unless a database URL is given. */
export interface StoreOptions {
  /** Data directory; the SQLite file is `<dataDir>/hearth.db`. */
  dataDir: string;
  /** `postgres://...` (or `postgresql://`) selects PostgreSQL; `sqlite:FILE` or unset means SQLite. */
  databaseUrl?: string;
  /** Called with the feed topics of every committed write batch. */
  onCommit?: (topics: Set<string>) => void;
  /** PostgreSQL: topics other replicas committed (LISTEN/NOTIFY). */
  onRemoteCommit?: (topics: string[]) => void;
  /** PostgreSQL: the feed connection came back; changes may have been missed. */
  onResync?: () => void;
  /** Where background connection errors go. */
  logError?: (error: unknown) => void;
  /** PostgreSQL: timeouts of queries, the write lock, idle transactions and the feed check (default POSTGRES_LIMITS; tests shorten them). */
  postgresLimits?: PostgresLimits;
  /** Told as each migration starts and ends (for `hearth-server migrate` and the start log to show); default: nothing. */
  onMigration?: (progress: MigrationProgress) => void;
  /** The migrations to apply; default hearth's own (migrations.ts). Tests add theirs. */
  migrations?: (dialect: DialectName) => Record<string, Migration>;
}

/** One step of a migration run: a migration begins, or it has run (committed with the run's last one). */
export type MigrationProgress = { name: string; phase: 'start' } | { name: string; phase: 'done'; ms: number };

/** The store: group-committed writes, committed-only reads, migrations. */
export interface Store {
  /** Which SQL dialect is underneath. */
  readonly dialect: DialectName;
  /** Reads (never blocked behind the writer; sees committed data only). */
  readonly reader: Kysely<Database>;
  /** Runs a unit of work in a group-committed transaction; resolves after COMMIT. */
  write<T>(unit: WriteUnit<T>): Promise<T>;
  /**
   * Runs a prepared write (precompiled statements, plain data in and out) in a group-committed
   * transaction on the writer thread, off the event loop; resolves after COMMIT.
   */
  writePrepared<A, R>(write: PreparedWrite<A, R>, args: A): Promise<R>;
  /** Units waiting for a batch. */
  writeQueueDepth(): number;
  /** Applies pending migrations; returns the names applied. */
  migrate(): Promise<string[]>;
  /** Throws ERR_STORE_UNAVAILABLE if the database does not answer. */
  ping(): Promise<void>;
  /** Closes every connection. */
  close(): Promise<void>;
}

/** Opens the store (does not migrate). */
export function openStore(options: StoreOptions): Store {
  const url = options.databaseUrl;
  if (url && /^postgres(ql)?:\/\//.test(url)) return openPostgresStore(url, options);
  if (url && !url.startsWith('sqlite:')) {
    throw new Error(
      `database URL ${redactDatabaseUrl(url)} is not supported: use postgres://USER:PASSWORD@HOST:PORT/DATABASE, sqlite:FILE, or leave HEARTH_DATABASE_URL unset for SQLite in the data dir`,
    );
  }
  return openSqliteStore(options);
}

/** The SQLite file of a store: `sqlite:FILE` from the database URL, else `<dataDir>/hearth.db`. */
export function sqliteFile(dataDir: string, databaseUrl?: string): string {
  return databaseUrl ? databaseUrl.slice('sqlite:'.length) : join(dataDir, 'hearth.db');
}

function openSqliteStore(options: StoreOptions): Store {
  const file = sqliteFile(options.dataDir, options.databaseUrl);
  const { writer, reader, raw } = openSqlite(file);
  const thread = new WriterThread(file);
  const queue = new WriteQueue(writer, { onCommit: options.onCommit ?? (() => undefined), prepared: thread });
  return {
    dialect: 'sqlite',
    reader,
    write: (unit) => queue.run(unit),
    writePrepared: (write, args) => queue.runPrepared(write, args),
    writeQueueDepth: () => queue.depth,
    async migrate() {
      const applied = await migrateToLatest(writer, 'sqlite', options);
      thread.warmUp(); // the schema is in place: the writer thread can open its connection
      return applied;
    },
    ping: () => ping(reader),
    async close() {
      await queue.drained();
      await thread.close();
      await writer.destroy();
      await reader.destroy();
      if (raw.open) raw.close();
    },
  };
}

/** hearth's tables, whose privileges serve checks at start on PostgreSQL: a Record, so that a table added to Database must be added here. */
const HEARTH_TABLES: Record<keyof Database, true> = {
  projects: true,
  servers: true,
  software_configs: true,
  software_deployments: true,
  signals: true,
  events: true,
  events_pruned: true,
  stacks: true,
  wait_conditions: true,
  wait_condition_signals: true,
  resource_credentials: true,
  scaling_groups: true,
  scaling_members: true,
  scaling_policies: true,
  actuator_deliveries: true,
  metric_samples: true,
  alarms: true,
  alarm_history: true,
  alarm_deliveries: true,
  alarm_leases: true,
};

/** Connections of a replica's read pool; with its write connection, 10 (plus the listening one). */
const READ_CONNECTIONS = 9;

/**
 * PostgreSQL, shared by every replica: a pool for reads, one connection for group-committed
 * writes (each batch under the cluster-wide write lock, its topics NOTIFYed on commit), and one
 * connection that LISTENs for the other replicas' commits.
 */
function openPostgresStore(url: string, options: StoreOptions): Store {
  const logError = options.logError ?? (() => undefined);
  const limits = options.postgresLimits ?? POSTGRES_LIMITS;
  // Writes have a connection of their own: a burst of reads (hundreds of event streams or
  // long-polls re-reading at once) queues for the read pool, never in front of a signal's commit.
  // One is all the write queue uses: it runs one transaction at a time.
  // One report for all the pools: a restart closes every idle connection of each at once.
  const poolError = idleConnectionLossReporter(logError);
  const { db } = openPostgresPool(url, poolError, { max: READ_CONNECTIONS, queryTimeoutMs: limits.queryTimeoutMs });
  const { db: writer } = openPostgresPool(url, poolError, { max: 1, queryTimeoutMs: limits.queryTimeoutMs });
  const listener = new FeedListener(url, {
    onRemoteCommit: options.onRemoteCommit ?? (() => undefined),
    onResync: options.onResync ?? (() => undefined),
    logError,
    checkMs: limits.feedCheckMs,
    // The listening connection idles between checks: a DBA's idle_session_timeout must not end it.
    sessionSql: sessionSettingsSql(limits.feedCheckMs),
  });
  const queue = new WriteQueue(writer, {
    onCommit: options.onCommit ?? (() => undefined),
    hooks: postgresTransactionHooks(listener.replicaId, limits),
  });
  return {
    dialect: 'postgres',
    reader: db,
    write: (unit) => queue.run(unit),
    // The same prepared body the SQLite writer thread runs, here step by step on the batch's transaction.
    writePrepared: (write, args) =>
      queue.run(({ trx, now, publish, event }) =>
        runPreparedOnPostgres(trx, write.module, write.name, args, { now, publish, event }),
      ) as never,
    writeQueueDepth: () => queue.depth,
    async migrate() {
      // On a connection without the query timeout: rewriting a large table or building an index
      // can take minutes, and a timed-out migration only failed the upgrade (rolled back) after
      // 30 s of work. A lost server is still noticed (TCP keepalive, see openPostgresPool).
      const { db: migrator } = openPostgresPool(url, poolError, { max: 1, queryTimeoutMs: 0 });
      let applied: string[];
      try {
        await checkPostgresSettings(migrator);
        applied = await migrateToLatest(migrator, 'postgres', options);
        await checkPostgresPrivileges(migrator, Object.keys(HEARTH_TABLES));
      } finally {
        await migrator.destroy();
      }
      await listener.start();
      return applied;
    },
    ping: () => ping(db),
    async close() {
      await queue.drained();
      await listener.close();
      await writer.destroy();
      await db.destroy();
    },
  };
}

/** Kysely's refusal when the database records a migration this build does not have. */
const UNKNOWN_MIGRATION = /previously executed migration (\S+) is missing/;

/**
 * Applies pending migrations (Kysely's Migrator, which locks against a concurrent run, and applies
 * them in one transaction on both dialects, so a failure leaves the schema as it was before the
 * run); returns the names applied.
 */
async function migrateToLatest(
  db: Kysely<Database>,
  dialect: DialectName,
  { migrations: chosen = migrations, onMigration = () => undefined }: Pick<StoreOptions, 'migrations' | 'onMigration'>,
): Promise<string[]> {
  const known = chosen(dialect);
  const reporting = Object.fromEntries(
    Object.entries(known).map(([name, migration]): [string, Migration] => [
      name,
      {
        ...migration,
        // Kysely's migration API takes Kysely<any>.
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        async up(trx: Kysely<any>) {
          const started = performance.now();
          onMigration({ name, phase: 'start' });
          await migration.up(trx);
          onMigration({ name, phase: 'done', ms: Math.round(performance.now() - started) });
        },
      },
    ]),
  );
  const migrator = new Migrator({ db, provider: { getMigrations: () => Promise.resolve(reporting) } });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw migrationError(error, Object.keys(known), results?.find((r) => r.status === 'Error')?.migrationName);
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** A failed migration as an error that says what to do; a database migrated by a newer version says so. */
function migrationError(error: unknown, known: string[], failed: string | undefined): Error {
  const unknown = error instanceof Error ? UNKNOWN_MIGRATION.exec(error.message) : null;
  if (unknown) {
    return Object.assign(
      new Error(
        `the database has migration ${unknown[1]}, which this hearth-server does not know (it knows ${known[0]} to ${known.at(-1)}): ` +
          'a newer hearth-server migrated it, so run that version (or newer) here too; if another application keeps Kysely migrations ' +
          'in the same database, give hearth a database of its own. Nothing was changed.',
        { cause: error },
      ),
      { code: 'ERR_SCHEMA_NEWER' },
    );
  }
  if (!(error instanceof Error)) return new Error(`migration failed: ${JSON.stringify(error)}`);
  if (!failed) return error;
  // The code stays, so an outage is still told apart (exit code, 503) from a broken migration.
  return Object.assign(
    new Error(
      `migration ${failed} failed: ${error.message}. It and the migrations run with it were rolled back: the database is as it was ` +
        'before this run. Fix the cause, then run hearth-server migrate again.',
      { cause: error },
    ),
    { code: (error as { code?: unknown }).code },
  );
}

/** Throws ERR_STORE_UNAVAILABLE unless the database answers a trivial query. */
async function ping(db: Kysely<Database>): Promise<void> {
  try {
    await sql`select 1`.execute(db);
  } catch {
    throw new HearthError('ERR_STORE_UNAVAILABLE');
  }
}

/** Hides the password of a database URL, and its query string (`?password=` works too), for messages and logs. */
export function redactDatabaseUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@]*@/, '//$1:***@').replace(/\?.*$/s, '?***');
}
