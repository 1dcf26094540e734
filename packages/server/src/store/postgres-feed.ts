// The change feed between replicas: every write transaction NOTIFYs the topics it changed when it
// commits (postgres.ts's transaction hooks), and each replica's FeedListener LISTENs on one
// connection of its own, which it keeps checked and reconnects.
import { randomUUID } from 'node:crypto';
import pg from 'pg';

/** The NOTIFY channel every replica listens on. */
export const FEED_CHANNEL = 'hearth_feed';

/** How often the listening connection must answer a trivial query, and how long it has to answer (10 s). */
export const FEED_CHECK_MS = 10_000;

/** NOTIFY payloads must stay under 8000 bytes; topics are split across several if needed. */
const MAX_PAYLOAD = 7000;

/** What a PostgreSQL store is told about other replicas' commits. */
export interface PostgresFeedOptions {
  /** Topics another replica committed (not this one's own). */
  onRemoteCommit(topics: string[]): void;
  /** The listening connection was re-established: changes may have been missed, re-check. */
  onResync(): void;
  /** Where connection errors of idle clients and the listener go. */
  logError(error: unknown): void;
  /** How often the listening connection is checked, and how long it has to answer (default FEED_CHECK_MS). */
  checkMs?: number;
  /** Statements run on each new listening connection before LISTEN (its session settings); default none. */
  sessionSql?: string;
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
  /** The pending connection check: the wait before the next one, or the deadline of the one in flight. */
  private checkTimer: NodeJS.Timeout | undefined;

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
    clearTimeout(this.checkTimer);
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
      if (this.client === client) {
        this.client = undefined;
        clearTimeout(this.checkTimer);
      }
      if (error && !this.closed) this.options.logError(error);
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
      await client.query(`${this.options.sessionSql ? `${this.options.sessionSql}; ` : ''}LISTEN ${FEED_CHANNEL}`);
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
    this.scheduleCheck(client, onLost);
    if (this.connectedOnce) this.options.onResync();
    this.connectedOnce = true;
  }

  /**
   * A connection can die without a word: a firewall or NAT drops the idle flow, the network
   * splits, the backend hangs. No 'end' ever comes, every NOTIFY after that is lost, and this
   * replica's caches and long-polls go stale for good (a deleted server kept authenticating). So
   * the listening connection must answer a trivial query every `checkMs`, within `checkMs`;
   * otherwise it is dropped, and the reconnect re-checks everything (onResync).
   */
  private scheduleCheck(client: pg.Client, onLost: (error: unknown) => void): void {
    const ms = this.options.checkMs ?? FEED_CHECK_MS;
    this.checkTimer = setTimeout(() => {
      if (this.client !== client) return;
      this.checkTimer = setTimeout(
        () => onLost(new Error(`the change feed connection did not answer within ${ms} ms; reconnecting`)),
        ms,
      ).unref();
      client.query('select 1').then(
        () => {
          if (this.client !== client) return; // replaced meanwhile: the timer is the new connection's
          clearTimeout(this.checkTimer);
          this.scheduleCheck(client, onLost);
        },
        (error: unknown) => onLost(error),
      );
    }, ms).unref();
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
