import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { CompiledQuery, Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import type { Database } from './schema.ts';
import {
  bindParams,
  driveAsync,
  preparedSteps,
  type PreparedWriteContext,
  type PreparedWriteModule,
  type Step,
} from './prepared-writes.ts';

/** The NOTIFY channel every replica listens on. */
export const FEED_CHANNEL = 'hearth_feed';

/**
 * The advisory lock every write transaction holds until it commits: writes are serialised across
 * replicas exactly as SQLite's single writer serialises them, so a unit's read-check-write (a
 * deadline still due, a wait condition still open, an idempotency key not yet used) holds on
 * PostgreSQL too, and event ids become visible in the order they were assigned. Group commit
 * keeps it cheap: a batch of writes takes it once.
 */
const WRITE_LOCK = 0x6865_6172_7468; // "hearth"

/** NOTIFY payloads must stay under 8000 bytes; topics are split across several if needed. */
const MAX_PAYLOAD = 7000;

/** int8 (counts, bigserial ids) and numeric come back as numbers, as they do from SQLite. */
const PG_INT8 = 20;
const PG_NUMERIC = 1700;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === PG_INT8 || oid === PG_NUMERIC ? Number : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** What a PostgreSQL store is told about other replicas' commits. */
export interface PostgresFeedOptions {
  /** Topics another replica committed (not this one's own). */
  onRemoteCommit(topics: string[]): void;
  /** The listening connection was re-established: changes may have been missed, re-check. */
  onResync(): void;
  /** Where connection errors of idle clients and the listener go. */
  logError(error: unknown): void;
}

/** A pool of connections to one PostgreSQL database, with Kysely over it. */
export function openPostgresPool(url: string, logError: (error: unknown) => void): { db: Kysely<Database>; pool: pg.Pool } {
  const pool = new pg.Pool({
    connectionString: url,
    max: 10,
    idleTimeoutMillis: 10_000,
    // An outage fails requests fast (503) instead of holding them.
    connectionTimeoutMillis: 5_000,
    query_timeout: 30_000,
    application_name: 'hearth-server',
    types,
  });
  // An idle client whose server went away emits here; without a listener it would crash the process.
  pool.on('error', (error) => logError(error));
  // A client checked out of the pool (mid-query or mid-transaction) emits 'error' on the client
  // itself, where pg-pool has no listener while it is lent: without one a database that goes away
  // under a query crashes the process. The query is rejected too (a 503), and the pool drops the
  // client when it is released.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), pool };
}

/** The begin/before-commit steps of every write transaction on PostgreSQL. */
export function postgresTransactionHooks(replicaId: string) {
  return {
    async begin(trx: Transaction<Database>): Promise<void> {
      await sql`select pg_advisory_xact_lock(${WRITE_LOCK})`.execute(trx);
    },
    // NOTIFY is transactional: listeners hear it only if and when the batch commits.
    async beforeCommit(trx: Transaction<Database>, topics: ReadonlySet<string>): Promise<void> {
      for (const payload of feedPayloads(replicaId, [...topics])) {
        await sql`select pg_notify(${FEED_CHANNEL}, ${payload})`.execute(trx);
      }
    },
  };
}

/** Splits topics into NOTIFY payloads `{"o": replica, "t": [...]}` of at most MAX_PAYLOAD bytes. */
export function feedPayloads(replicaId: string, topics: string[]): string[] {
  const payloads: string[] = [];
  let chunk: string[] = [];
  let size = 0;
  for (const topic of topics) {
    const cost = Buffer.byteLength(topic) + 3;
    if (chunk.length > 0 && size + cost > MAX_PAYLOAD) {
      payloads.push(JSON.stringify({ o: replicaId, t: chunk }));
      chunk = [];
      size = 0;
    }
    chunk.push(topic);
    size += cost;
  }
  if (chunk.length > 0) payloads.push(JSON.stringify({ o: replicaId, t: chunk }));
  return payloads;
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

/**
 * This replica's ear on the change feed: one dedicated connection that LISTENs, reconnecting with
 * backoff when it drops. After a reconnect it calls `onResync` (notifications sent while it was
 * away are lost, so every waiter re-reads). Its own commits are skipped: they were published
 * locally already.
 */
export class FeedListener {
  readonly replicaId = randomUUID();
  private client: pg.Client | undefined;
  private closed = false;
  private connectedOnce = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private backoffMs = 50;
  private firstConnect: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly options: PostgresFeedOptions,
  ) {}

  /** Connects (once); resolves when LISTEN is in place, rejects if the first attempt fails. */
  start(): Promise<void> {
    this.firstConnect ??= this.connect();
    return this.firstConnect;
  }

  /** Whether the listening connection is up (for /readyz and tests). */
  get listening(): boolean {
    return this.client !== undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5_000, application_name: 'hearth-server feed' });
    let lost = false;
    const onLost = (error?: unknown) => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = undefined;
      if (error) this.options.logError(error);
      client.end().catch(() => undefined);
      this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => {
      if (message.channel !== FEED_CHANNEL || !message.payload) return;
      try {
        const { o, t } = JSON.parse(message.payload) as { o: string; t: string[] };
        if (o !== this.replicaId && Array.isArray(t)) this.options.onRemoteCommit(t);
      } catch (error) {
        this.options.logError(error);
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${FEED_CHANNEL}`);
    } catch (error) {
      lost = true;
      await client.end().catch(() => undefined);
      if (!this.connectedOnce) throw error;
      this.scheduleReconnect();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.backoffMs = 50;
    if (this.connectedOnce) this.options.onResync();
    this.connectedOnce = true;
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, 2_000);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect().catch((error: unknown) => {
        this.options.logError(error);
        this.scheduleReconnect();
      });
    }, delay);
    this.retryTimer.unref();
  }
}
