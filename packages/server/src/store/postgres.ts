import pg from 'pg';
import { performance } from 'node:perf_hooks';
import { CompiledQuery, Kysely, PostgresDialect, sql, type PostgresPool, type PostgresPoolClient, type Transaction } from 'kysely';
import type { Database } from './schema.ts';
import { isStoreUnavailable } from './unavailable.ts';
import { TaskNotice } from '../domain/task-health.ts';
import { textGuard } from './text-guard.ts';
import { FEED_CHANNEL, FEED_CHECK_MS, feedPayloads } from './postgres-feed.ts';
import {
  bindParams,
  driveAsync,
  preparedSteps,
  type PreparedWriteContext,
  type PreparedWriteModule,
  type Step,
} from './prepared-writes.ts';

/**
 * The advisory lock every write transaction holds until it commits: writes are serialised across
 * replicas exactly as SQLite's single writer serialises them, so a unit's read-check-write (a
 * deadline still due, a wait condition still open, an idempotency key not yet used) holds on
 * PostgreSQL too, and event ids become visible in the order they were assigned. Group commit
 * keeps it cheap: a batch of writes takes it once.
 */
export const WRITE_LOCK = 0x6865_6172_7468; // "hearth"

/**
 * The bounds on waiting for PostgreSQL or for another replica. Without them a replica whose host
 * died or froze while holding the write lock blocked every replica's writes until TCP keepalive
 * noticed (hours on Linux's defaults), each waiting request hung for a minute before its 503, and a
 * connection that went silent was never noticed (the feed) or kept being lent (the pool).
 */
export interface PostgresLimits {
  /** PostgreSQL ends a write transaction's session once it sits idle this long (releasing the write lock); default 10 s. */
  idleInTransactionMs: number;
  /** A write batch waits this long for the write lock, then fails as unavailable (a 503 the client retries); default 15 s, more than idleInTransactionMs so a dead holder's waiters get through. */
  writeLockWaitMs: number;
  /** Every this long the listening connection must answer a trivial query within as long, or it is replaced; default 10 s. */
  feedCheckMs: number;
  /** A query unanswered this long fails as unavailable (a 503) and its connection is dropped; default 30 s, more than writeLockWaitMs. */
  queryTimeoutMs: number;
}

/** The defaults of PostgresLimits. */
export const POSTGRES_LIMITS: Readonly<PostgresLimits> = {
  idleInTransactionMs: 10_000,
  writeLockWaitMs: 15_000,
  feedCheckMs: FEED_CHECK_MS,
  queryTimeoutMs: 30_000,
};

/** int8 (counts, bigserial ids) and numeric come back as numbers, as they do from SQLite. */
const PG_INT8 = 20;
const PG_NUMERIC = 1700;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === PG_INT8 || oid === PG_NUMERIC ? Number : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** Options of openPostgresPool. */
export interface PostgresPoolOptions {
  /** Most connections open at once; default 10. */
  max?: number;
  /** A query unanswered this long fails as unavailable (a 503); default 30 s; 0 for no limit (migrations). */
  queryTimeoutMs?: number;
}

/** How often lost idle connections are reported: one line per window, however many went. */
export const IDLE_LOSS_LOG_MS = 60_000;

/**
 * The pools' error reporter. A restart of PostgreSQL (or a killed backend) closes every idle
 * connection of every pool at once, and each used to log its own error with a stack, while
 * requests already get 503s and the feed says it lost its connection. An idle connection lost to
 * an outage now counts toward one line a minute, without a stack; any other error is passed on.
 */
export function idleConnectionLossReporter(logError: (error: unknown) => void, windowMs = IDLE_LOSS_LOG_MS): (error: unknown) => void {
  let lastLineAt = -Infinity;
  let lost = 0;
  return (error) => {
    if (!isStoreUnavailable(error)) return logError(error);
    lost++;
    // Monotonic: a step of the wall clock back must not silence the line for the size of the step.
    const now = performance.now();
    if (now - lastLineAt < windowMs) return;
    lastLineAt = now;
    const code = (error as { code?: unknown }).code;
    logError(
      new TaskNotice(
        'PostgreSQL closed idle connections: the database restarted or cannot be reached; requests get 503 until it is back, and new connections are opened as needed (logged at most once a minute)',
        'error',
        {
          task: 'postgres connections',
          code: typeof code === 'string' ? code : 'ERR_STORE_UNAVAILABLE',
          lost,
          message: (error as Error).message,
        },
      ),
    );
    lost = 0;
  };
}

/** A pool of connections to one PostgreSQL database, with Kysely over it. */
export function openPostgresPool(
  url: string,
  logError: (error: unknown) => void,
  { max = 10, queryTimeoutMs = 30_000 }: PostgresPoolOptions = {},
): { db: Kysely<Database>; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    idleTimeoutMillis: 10_000,
    // An outage fails requests fast (503) instead of holding them.
    connectionTimeoutMillis: 5_000,
    // Without a query timeout (migrations) a host that vanished is still noticed, by TCP keepalive
    // (probes after 10 s idle; Linux then gives up after its 9 probes, 75 s apart).
    ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : { keepAlive: true, keepAliveInitialDelayMillis: 10_000 }),
    application_name: 'hearth-server',
    types,
  });
  // An idle client whose server went away emits here; without a listener it would crash the process.
  pool.on('error', (error) => logError(error));
  // A client checked out of the pool (mid-query or mid-transaction) emits 'error' on the client
  // itself, where pg-pool has no listener while it is lent: without one a database that goes away
  // under a query crashes the process. The query is rejected too (a 503), and the pool drops the
  // client when it is released.
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
    // The same bound on the server's side, queued ahead of the first query the client is lent for.
    // query_timeout only gives up client-side: the backend went on waiting (on a lock, say) after
    // the pool dropped its connection, and each timed-out read left one more behind, past the
    // connections max_connections was sized for. SET, not a startup parameter, which a session-mode
    // pgbouncer would refuse. The rest of the session is set up in the same round trip.
    client.query(sessionSettingsSql(queryTimeoutMs)).catch(() => undefined);
  });
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: discardingBroken(pool) }), plugins: [textGuard] }), pool };
}

/**
 * The session settings hearth relies on, whatever the role or database sets (ALTER ROLE/DATABASE ... SET),
 * as one round trip of SETs (the simple protocol takes several statements).
 * - idle_session_timeout (PostgreSQL 14+, skipped before) is 0: PostgreSQL ended the connections
 *   hearth keeps idle (the read pool's for 10 s, the write connection, the feed's between checks), so
 *   every few seconds the feed reconnected and re-checked everything, background tasks and requests
 *   met a dead connection, and each loss logged an error with a stack.
 * - statement_timeout is hearth's bound (`queryTimeoutMs`), or none (0) for migrations; a migration
 *   runs without lock_timeout and idle_in_transaction_session_timeout too: under a DBA's low values a
 *   migration that rewrites a large table, or waits for another replica's migration, failed the start.
 */
export function sessionSettingsSql(queryTimeoutMs: number | undefined): string {
  // statement_timeout first: each statement runs under the one before it set, and the DBA's may be too short for the rest.
  const settings = queryTimeoutMs === undefined ? [] : [`set statement_timeout = ${Math.max(0, Math.round(queryTimeoutMs))}`];
  settings.push(`select set_config('idle_session_timeout', '0', false) where current_setting('idle_session_timeout', true) is not null`);
  if (queryTimeoutMs === 0) settings.push('set lock_timeout = 0', 'set idle_in_transaction_session_timeout = 0');
  return settings.join('; ');
}

/**
 * The pool as Kysely sees it, except that a connection on which a query failed with an outage
 * error is destroyed when released instead of lent again. After a read timeout (a silent
 * connection: a dropped flow, a hung backend) pg leaves the query running and queues the next one
 * behind it, so the pool kept lending that connection and every write on it failed 30 s later, for
 * as long as the dead connection lasted.
 */
function discardingBroken(pool: pg.Pool): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect();
      let broken = false;
      const query = (text: string, values: ReadonlyArray<unknown>) =>
        client.query(text, [...values]).catch((error: unknown) => {
          broken ||= isStoreUnavailable(error);
          throw error;
        });
      return {
        // Only Kysely's (sql, parameters) overload: its cursor overload needs `cursor` in the dialect config, which is not set.
        query: query as unknown as PostgresPoolClient['query'],
        release: (destroy?: boolean) => client.release(destroy === true || broken),
      };
    },
    end: () => pool.end(),
  };
}

/**
 * What a write transaction runs first: its timeouts, then the write lock, in one round trip (the
 * simple protocol takes several statements). SET LOCAL ends with the transaction, and needs no
 * startup parameter, which a session-mode pgbouncer would refuse.
 * - lock_timeout bounds the wait server-side (55P03, a clean rollback). The client's query_timeout
 *   left the wait running and the connection stuck behind it, so a request hung for a minute.
 * - idle_in_transaction_session_timeout makes PostgreSQL end the session of a replica that stops
 *   mid-transaction (host lost, process frozen), which frees the lock for the others.
 */
export function writeLockSql(limits: PostgresLimits = POSTGRES_LIMITS): string {
  const ms = (value: number) => Math.max(1, Math.round(value));
  return (
    `set local lock_timeout = ${ms(limits.writeLockWaitMs)}; ` +
    `set local idle_in_transaction_session_timeout = ${ms(limits.idleInTransactionMs)}; ` +
    `select pg_advisory_xact_lock(${WRITE_LOCK})`
  );
}

/** The begin/before-commit steps of every write transaction on PostgreSQL. */
export function postgresTransactionHooks(replicaId: string, limits: PostgresLimits = POSTGRES_LIMITS) {
  const lockStatement = sql.raw(writeLockSql(limits));
  return {
    async begin(trx: Transaction<Database>): Promise<void> {
      await lockStatement.execute(trx);
    },
    // NOTIFY is transactional: listeners hear it only if and when the batch commits.
    async beforeCommit(trx: Transaction<Database>, topics: ReadonlySet<string>): Promise<void> {
      for (const payload of feedPayloads(replicaId, [...topics])) {
        await sql`select pg_notify(${FEED_CHANNEL}, ${payload})`.execute(trx);
      }
    },
  };
}

/** Modules of prepared writes, imported once (an `await import` per signal cost 3.5 % of the main thread under load). */
const preparedModules = new Map<string, PreparedWriteModule>();

/**
 * Runs a prepared write (the same body the SQLite writer thread runs) on an open PostgreSQL
 * transaction, step by step.
 */
export async function runPreparedOnPostgres(
  trx: Transaction<Database>,
  module: string,
  name: string,
  args: unknown,
  ctx: Omit<PreparedWriteContext, 'get' | 'run'>,
): Promise<unknown> {
  let loaded = preparedModules.get(module);
  if (!loaded) preparedModules.set(module, (loaded = (await import(module)) as PreparedWriteModule));
  const write = loaded.preparedWrites[name];
  if (!write) throw new Error(`no prepared write ${name} in ${module}`);
  const answer = async (step: Step): Promise<unknown> => {
    const result = await trx.executeQuery(CompiledQuery.raw(step.query.pgSql, bindParams(step.query, step.params)));
    return step.op === 'get' ? result.rows[0] : Number(result.numAffectedRows ?? 0n);
  };
  return driveAsync(write({ ...ctx, ...preparedSteps }, args as never), answer);
}
