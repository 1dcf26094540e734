import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { DerivedConfig, MetadataDocument } from '@hearth/protocol';
import { sql, type Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import { ANY_TOPIC, topics, waitForChange, type Feed } from '../feed/feed.ts';
import type { ConfigService } from './configs.ts';
import { deriveConfig, sortDerived, type SignalEndpoint } from './derive.ts';
import type { Database, DeploymentRow } from '../store/schema.ts';
import { HearthError } from './errors.ts';
import { ATTACHED } from './server-deployments.ts';

/** A server's metadata document, serialised once, with its validators. */
export interface MetadataSnapshot {
  /** The JSON text sent to the agent. */
  body: string;
  /** Strong ETag (quoted). */
  etag: string;
  /** RFC 1123 time the document last changed (os-collect-config's request collector uses it). */
  lastModified: string;
  /** IN_PROGRESS deployments the agent has not fetched yet. */
  unfetched: string[];
}

/** Builds the URL an agent signals a deployment's result to. */
export type SignalEndpointFor = (deployment: DeploymentRow) => SignalEndpoint | null;

interface CacheEntry {
  snapshot: MetadataSnapshot;
}

/** A build of a server's document in flight; `stale` once a change to that server lands meanwhile. */
interface Build {
  stale: boolean;
}

/**
 * The largest metadata document a server may have, in bytes: the hearth collector's limit (agent-kit
 * refuses a larger response body), so that no write leaves an agent unable to read its document.
 */
export const MAX_METADATA_DOCUMENT_BYTES = 64 * 1024 * 1024;

/**
 * What a deployment's derived config takes besides its config's and its own stored text: the JSON
 * keys, ids and times, and the `deploy_*` inputs (their descriptions and signal URLs).
 */
const DERIVED_OVERHEAD_BYTES = 4096;

/** A deployment whose own config and inputs take less than this (estimated) is not checked against the limit. */
export const CHECKED_DEPLOYMENT_BYTES = 64 * 1024;

/** The stored fields of a deployment that its derived config shows. */
type DocumentPart = Pick<DeploymentRow, 'id' | 'server_id' | 'config_id' | 'input_values' | 'name' | 'stack_name' | 'resource_name'>;

// An upper estimate of a deployment's derived config, in bytes, from stored lengths alone (no config
// text is read): its config's text, options and outputs, twice its declared inputs (a default is
// shown again as the value) and its input values (an undeclared one is wrapped in an input), names
// as if every character were escaped (`\u0001`), and the fixed overhead. The config's part:
const CONFIG_BYTES = sql<number>`coalesce(octet_length(c.config), 0) + octet_length(c.options) + octet_length(c.outputs)
  + 2 * octet_length(c.inputs) + 6 * (coalesce(octet_length(c.name), 0) + octet_length(c.group_name))`;
// The deployment's part, in SQL for stored rows and in code for the row being written.
const DEPLOYMENT_BYTES = sql<number>`2 * octet_length(d.input_values) + 6 * (coalesce(octet_length(d.name), 0)
  + coalesce(octet_length(d.stack_name), 0) + coalesce(octet_length(d.resource_name), 0) + octet_length(d.server_id))`;
function deploymentBytes(row: DocumentPart): number {
  const bytes = (text: string | null) => (text === null ? 0 : Buffer.byteLength(text));
  return 2 * bytes(row.input_values) + 6 * (bytes(row.name) + bytes(row.stack_name) + bytes(row.resource_name) + bytes(row.server_id));
}

/** An upper estimate of a server's metadata document, in bytes (see above), leaving out the deployment `except`. */
export async function estimateDocumentBytes(
  trx: Transaction<Database>,
  projectId: string,
  serverId: string,
  except?: string,
): Promise<number> {
  let query = trx
    .selectFrom('software_deployments as d')
    .innerJoin('software_configs as c', 'c.id', 'd.config_id')
    .select(sql<number>`coalesce(sum(${CONFIG_BYTES} + ${DEPLOYMENT_BYTES} + ${DERIVED_OVERHEAD_BYTES}), 0)`.as('bytes'))
    .where('d.project_id', '=', projectId)
    .where('d.server_id', '=', serverId)
    .where(ATTACHED);
  if (except !== undefined) query = query.where('d.id', '!=', except);
  return Number((await query.executeTakeFirstOrThrow()).bytes);
}

/**
 * Refuses a deployment about to be written (inside its transaction, before it writes) that would
 * make its server's metadata document larger than the agent reads: the agent would refuse the
 * whole document, every deployment on that server with it, while the server kept serving it.
 */
export async function assertDocumentFits(trx: Transaction<Database>, projectId: string, row: DocumentPart): Promise<void> {
  const config = await trx
    .selectFrom('software_configs as c')
    .select(CONFIG_BYTES.as('bytes'))
    .where('c.id', '=', row.config_id)
    .executeTakeFirstOrThrow();
  const mine = Number(config.bytes) + deploymentBytes(row);
  // The sum reads every deployment of the server: a cost that grows with them, paid only by a deployment
  // big enough to matter (large configs are how a document outgrows its agent; thousands of small ones
  // on one VM are not checked).
  if (mine < CHECKED_DEPLOYMENT_BYTES) return;
  const others = await estimateDocumentBytes(trx, projectId, row.server_id, row.id);
  const bytes = others + mine + DERIVED_OVERHEAD_BYTES;
  if (bytes <= MAX_METADATA_DOCUMENT_BYTES) return;
  const mib = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  throw new HearthError('ERR_DEPLOYMENT_INVALID', {
    reason:
      `server ${row.server_id}'s metadata document would be about ${mib(bytes)}, over the ${mib(MAX_METADATA_DOCUMENT_BYTES)} its agent reads; ` +
      'deploy smaller configs or input values to it (ship large files by URL), or delete some of its deployments',
  });
}

/** The server id of a `server:<id>` topic, and of a `server-deleted:<id>` one. */
const SERVER_TOPIC = topics.serverMetadata('');
const SERVER_DELETED_TOPIC = topics.serverDeleted('');

/** The validators last given out for a server's document. */
interface Issued {
  etag: string;
  lastModifiedMs: number;
}

/**
 * The Last-Modified of a document, in ms (whole seconds, as HTTP dates have): the previous one while
 * the ETag is the same, else now, but at least a second after the previous one. A change within the
 * second of the one before must still look newer to a client that compares Last-Modified (the
 * `request` collector of a POLL_TEMP_URL server skips a document whose date is not newer).
 */
export function nextLastModified(previous: Issued | undefined, etag: string, nowMs: number): number {
  if (previous?.etag === etag) return previous.lastModifiedMs;
  const now = Math.floor(nowMs / 1000) * 1000;
  return previous ? Math.max(now, previous.lastModifiedMs + 1000) : now;
}

/**
 * Serves each server's metadata document from memory: built once per change, so an agent's
 * conditional GET costs a map lookup. The feed invalidates an entry when the server's deployments
 * change, or the server itself (registered, deleted). A build that raced a change is not cached:
 * every change marks the builds of its server in flight stale, and a counter for "anything may have
 * changed" (a resync) covers them all, because the change a build must not miss is one that lands
 * while no entry exists yet. Builds are tracked only while in flight: a counter kept per server ever
 * changed grew with every server registered and deleted, for as long as the process ran.
 */
export class MetadataService {
  private readonly cache = new Map<string, CacheEntry>();
  /** Builds in flight, per server. */
  private readonly builds = new Map<string, Set<Build>>();
  /** The validators last given out, per server, least recently built first (at most `maxEntries`). */
  private readonly issued = new Map<string, Issued>();
  private epoch = 0;
  /** Characters of the documents in `cache`. */
  private cachedChars = 0;

  constructor(
    private readonly store: Store,
    private readonly configs: ConfigService,
    private readonly feed: Feed,
    private readonly signalEndpoint: SignalEndpointFor,
    private readonly collectorSettings: (serverId: string) => Promise<Record<string, unknown>>,
    private readonly maxEntries = 50_000,
    /** Characters of cached documents kept at most (default 512 Mi): a few servers with documents of tens of MB must not fill the heap. */
    private readonly maxCachedChars = 512 * 1024 * 1024,
  ) {
    // For the life of the app: the feed drops its listeners when the app closes.
    feed.subscribeAll((topic) => {
      if (topic === ANY_TOPIC) this.invalidateAll();
      else if (topic.startsWith(SERVER_TOPIC)) this.invalidate(topic.slice(SERVER_TOPIC.length));
      else if (topic.startsWith(SERVER_DELETED_TOPIC)) this.forget(topic.slice(SERVER_DELETED_TOPIC.length));
    });
  }

  /** The derived configs of a server's deployments, in Heat's order (not those its id's deleted registration left: see ATTACHED). */
  async derivedConfigs(projectId: string, serverId: string): Promise<{ derived: DerivedConfig[]; unfetched: string[] }> {
    const rows = await this.store.reader
      .selectFrom('software_deployments as d')
      .selectAll('d')
      .where('d.project_id', '=', projectId)
      .where('d.server_id', '=', serverId)
      .where(ATTACHED)
      .execute();
    const entries = await Promise.all(
      rows.map(async (row) => ({
        derived: deriveConfig(await this.configs.get(projectId, row.config_id), row, this.signalEndpoint(row)),
        createdAt: row.created_at,
        id: row.id,
      })),
    );
    const unfetched = rows.filter((r) => r.status === 'IN_PROGRESS' && r.fetched_at === null).map((r) => r.id);
    return { derived: sortDerived(entries), unfetched };
  }

  /** The cached snapshot of a server's document, if there is one (the conditional GET's fast path). */
  cached(serverId: string): MetadataSnapshot | undefined {
    return this.cache.get(serverId)?.snapshot;
  }

  /** The current snapshot of a server's document. */
  async snapshot(projectId: string, serverId: string): Promise<MetadataSnapshot> {
    const cached = this.cache.get(serverId);
    if (cached) return cached.snapshot;
    const build: Build = { stale: false };
    const epoch = this.epoch;
    let builds = this.builds.get(serverId);
    if (!builds) this.builds.set(serverId, (builds = new Set()));
    builds.add(build);
    let document: MetadataDocument;
    let unfetched: string[];
    try {
      const configs = await this.derivedConfigs(projectId, serverId);
      unfetched = configs.unfetched;
      document = { deployments: configs.derived, 'os-collect-config': await this.collectorSettings(serverId) };
    } finally {
      builds.delete(build);
      if (builds.size === 0) this.builds.delete(serverId);
    }
    const body = JSON.stringify(document);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
    const lastModifiedMs = nextLastModified(this.issued.get(serverId), etag, Date.now());
    // Re-inserted, so that the least recently built server is the first one forgotten.
    this.issued.delete(serverId);
    this.issued.set(serverId, { etag, lastModifiedMs });
    if (this.issued.size > this.maxEntries) this.issued.delete(this.issued.keys().next().value as string);
    const snapshot: MetadataSnapshot = { body, etag, lastModified: new Date(lastModifiedMs).toUTCString(), unfetched };
    if (!build.stale && this.epoch === epoch && !this.cache.has(serverId)) {
      while (this.cache.size > 0 && (this.cache.size >= this.maxEntries || this.cachedChars + body.length > this.maxCachedChars)) {
        this.evictOne();
      }
      this.cache.set(serverId, { snapshot });
      this.cachedChars += body.length;
    }
    return snapshot;
  }

  /** Forgets that these deployments are unfetched (the document itself is unchanged). */
  clearUnfetched(serverId: string): void {
    const entry = this.cache.get(serverId);
    if (entry) entry.snapshot.unfetched = [];
  }

  /**
   * Long-poll: resolves with the first snapshot whose ETag differs from `etag`, or the current one
   * when `waitMs` passes (or the client goes away) with no change.
   */
  async waitForNew(projectId: string, serverId: string, etag: string, waitMs: number, abort?: AbortSignal): Promise<MetadataSnapshot> {
    // On the monotonic clock: with the wall clock, a step back (NTP) held the poll open for as long as the step.
    const until = performance.now() + waitMs;
    let snapshot = await this.snapshot(projectId, serverId);
    while (snapshot.etag === etag && performance.now() < until && !abort?.aborted) {
      await waitForChange(this.feed, [topics.serverMetadata(serverId)], until - performance.now(), abort);
      snapshot = await this.snapshot(projectId, serverId);
    }
    return snapshot;
  }

  /** Drops a server's cached document, and keeps a build in flight from caching what it read. */
  invalidate(serverId: string): void {
    const builds = this.builds.get(serverId);
    if (builds) for (const build of builds) build.stale = true;
    const entry = this.cache.get(serverId);
    if (entry) this.cachedChars -= entry.snapshot.body.length;
    this.cache.delete(serverId);
  }

  /** Drops all that is kept for a deleted server: its document, its validators; a build in flight is not cached. */
  forget(serverId: string): void {
    this.invalidate(serverId);
    this.issued.delete(serverId);
  }

  /** Drops every cached document (changes may have been missed), and keeps builds in flight from caching. */
  invalidateAll(): void {
    this.epoch++;
    this.cache.clear();
    this.cachedChars = 0;
  }

  private evictOne(): void {
    const oldest = this.cache.keys().next().value;
    if (oldest !== undefined) this.invalidate(oldest);
  }

  /** Characters of the cached documents. */
  get cachedCharacters(): number {
    return this.cachedChars;
  }

  /** Cached documents, for /metrics. */
  get size(): number {
    return this.cache.size;
  }

  /** Servers this service keeps anything for (a document, validators, a build in flight): bounded, whatever the churn. */
  get trackedServers(): number {
    return new Set([...this.cache.keys(), ...this.issued.keys(), ...this.builds.keys()]).size;
  }
}
