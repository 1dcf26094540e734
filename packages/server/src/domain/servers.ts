import { randomUUID } from 'node:crypto';
import { heatTime, type Server, type ServerCreate, type ServerCreated } from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { ServerRow } from '../store/schema.ts';
import { newAccessKeyId, type SecretDeriver } from '../auth/secrets.ts';
import { HearthError } from './errors.ts';
import { ANY_TOPIC, CREDENTIAL_TOPIC, topics } from '../feed/feed.ts';
import { pseudoPlacement, placementOf, type StackService } from './stacks.ts';
import { collectorConfig, collectorConfText, type TransportContext } from './transports.ts';
import { resourceEvent } from './events.ts';
import { orphanDeployments } from './server-deployments.ts';
import { LastSeenWriter } from './server-last-seen.ts';
import type { WriteContext } from '../store/write-queue.ts';

/** The server id of a `server-deleted:<id>` topic. */
const SERVER_DELETED_TOPIC = topics.serverDeleted('');

/** A resource name must not contain `/` or `.` (os-collect-config splits `Resource.Metadata` on dots). */
const RESOURCE_NAME = /^[A-Za-z0-9_:-]+$/;

/** The identity an agent credential resolves to. */
export interface AgentIdentity {
  serverId: string;
  projectId: string;
  accessKeyId: string;
  /** The derived secret, kept to verify later calls cheaply. */
  secret: string;
}

/** Servers (VMs), their agent credentials and when each was last seen. */
export class ServerService {
  /** access key id -> identity; filled on first use, dropped when the server is deleted. */
  private readonly byAccessKey = new Map<string, AgentIdentity>();
  /** When each server's agent last called, written in batches. */
  private readonly seen: LastSeenWriter;

  /** server id -> row, for the collector settings in its metadata document (filled by create and lookups). */
  private readonly rows = new Map<string, ServerRow>();
  /** Counts revocations seen; a lookup that overlapped one does not cache what it read (it may be the revoked row). */
  private revocations = 0;

  constructor(
    private readonly store: Store,
    private readonly secrets: SecretDeriver,
    private readonly metadataUrl: string,
    private readonly stacks: StackService,
    private readonly transport: TransportContext,
    /** Where failures of the batched last-seen writes are reported. */
    logError: (error: unknown) => void,
    /** How often last-seen times are written (default 5 s). */
    seenFlushMs = 5000,
  ) {
    this.seen = new LastSeenWriter(store, logError, seenFlushMs);
  }

  /** Registers a server; the credential in the reply is the only time its secret is shown. */
  async create(projectId: string, body: ServerCreate): Promise<ServerCreated> {
    const id = body.id ?? randomUUID();
    const accessKeyId = newAccessKeyId(this.secrets);
    const resourceName = body.stack !== undefined ? (body.resource_name ?? body.name) : pseudoPlacement('server').resource_name;
    if (!RESOURCE_NAME.test(resourceName)) {
      throw new HearthError('ERR_REQUEST_INVALID', {
        reason: `resource name ${JSON.stringify(resourceName)} may hold only letters, digits, _, : and -; give resource_name`,
      });
    }
    const row = await this.store.write(async ({ trx, now, event, publish }) => {
      const existing = await trx.selectFrom('servers').select('id').where('id', '=', id).executeTakeFirst();
      if (existing) throw new HearthError('ERR_SERVER_EXISTS', { id });
      // Read in the write transaction: a stack deleted meanwhile is a coded 404, not a server left in it.
      const stack = body.stack === undefined ? null : await this.stacks.resolve(projectId, body.stack, trx);
      if (stack) await this.stacks.assertNameFree(trx, stack, resourceName);
      const values: ServerRow = {
        id,
        project_id: projectId,
        name: body.name,
        access_key_id: accessKeyId,
        created_at: now,
        last_seen_at: null,
        config_transport: body.software_config_transport ?? 'HEARTH_LONG_POLL',
        stack_id: stack?.id ?? null,
        stack_name: stack?.name ?? null,
        resource_name: stack ? resourceName : null,
      };
      await trx.insertInto('servers').values(values).execute();
      event(
        resourceEvent(
          { project_id: projectId, resource_type: 'server', resource_id: id, server_id: id },
          'server.created',
          `Server ${body.name} registered (${values.config_transport})`,
          { access_key_id: accessKeyId, software_config_transport: values.config_transport },
        ),
      );
      // Its document holds its credential and transport: one cached under this id before is not its own.
      publish(topics.serverMetadata(id));
      return values;
    });
    this.remember(row);
    const secret = this.secrets.agentSecret(accessKeyId);
    const osCollectConfig = collectorConfig(this.transport, row);
    return {
      server: this.toApi(row),
      credential: {
        access_key_id: accessKeyId,
        secret_access_key: secret,
        token: `${accessKeyId}:${secret}`,
        metadata_url: this.metadataUrl,
      },
      os_collect_config: osCollectConfig,
      os_collect_config_conf: collectorConfText(osCollectConfig),
    };
  }

  /**
   * The `os-collect-config` settings of a server's metadata document (Heat's, for its transport),
   * from the cached row or the store. A server not registered (deployments may target it first)
   * gets the hearth collector's URL only.
   */
  async collectorSettings(serverId: string): Promise<Record<string, unknown>> {
    const row =
      this.rows.get(serverId) ?? (await this.store.reader.selectFrom('servers').selectAll().where('id', '=', serverId).executeTakeFirst());
    if (!row) return { collectors: ['hearth'], hearth: { metadata_url: this.metadataUrl, server_id: serverId } };
    this.remember(row);
    return collectorConfig(this.transport, row);
  }

  /** The server holding an access key, or undefined (servers are cached once seen). */
  async byAccessKeyId(accessKeyId: string): Promise<ServerRow | undefined> {
    const row = await this.store.reader.selectFrom('servers').selectAll().where('access_key_id', '=', accessKeyId).executeTakeFirst();
    if (row) this.remember(row);
    return row;
  }

  private remember(row: ServerRow): void {
    if (this.rows.size > 100_000) this.rows.clear();
    this.rows.set(row.id, row);
  }

  /**
   * Lists a project's servers by id: all of them, or at most `limit`, after the server `marker` (one
   * not in the project is ERR_SERVER_NOT_FOUND, so a client paging by marker never loops).
   */
  async list(projectId: string, limit?: number, marker?: string): Promise<Server[]> {
    let query = this.store.reader.selectFrom('servers').selectAll().where('project_id', '=', projectId);
    if (marker !== undefined) {
      await this.get(projectId, marker);
      query = query.where('id', '>', marker);
    }
    if (limit !== undefined) query = query.limit(limit);
    const rows = await query.orderBy('id').execute();
    return rows.map((r) => this.toApi(r));
  }

  /** Shows one server, or throws ERR_SERVER_NOT_FOUND. */
  async get(projectId: string, id: string): Promise<Server> {
    const row = await this.store.reader.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirst();
    if (!row || row.project_id !== projectId) throw new HearthError('ERR_SERVER_NOT_FOUND', { id });
    return this.toApi(row);
  }

  /**
   * Deletes a server, which revokes at once its credential and its deployments' own (their signal
   * URLs, keystone users and temp URLs were handed to that VM alone) and fails its IN_PROGRESS
   * deployments: no VM will signal them. Its deployments stay, as history, until deleted, but in no
   * server's document: a server registered again under its id is a fresh VM (orphanDeployments).
   */
  async delete(projectId: string, id: string): Promise<void> {
    const row = await this.store.write(async (ctx) => {
      const found = await ctx.trx.selectFrom('servers').selectAll().where('id', '=', id).executeTakeFirst();
      if (!found || found.project_id !== projectId) throw new HearthError('ERR_SERVER_NOT_FOUND', { id });
      await this.deleteIn(ctx, found);
      return found;
    });
    this.forgetDeleted(row);
  }

  /**
   * The store half of `delete`, in the caller's transaction (a scaling group's member removal deletes
   * the records hearth made with it); `cause` ends the event's first clause. The caller calls
   * forgetDeleted once the transaction committed.
   */
  async deleteIn(ctx: WriteContext, found: ServerRow, cause = ''): Promise<void> {
    const { trx, event, publish } = ctx;
    const { failed, detached } = await orphanDeployments(ctx, found);
    await trx.deleteFrom('scaling_members').where('server_id', '=', found.id).execute();
    await trx.deleteFrom('servers').where('id', '=', found.id).execute();
    event(
      resourceEvent(
        { project_id: found.project_id, resource_type: 'server', resource_id: found.id, server_id: found.id },
        'server.deleted',
        `Server ${found.name} deleted${cause}; its credential and those of its deployments are revoked` +
          (failed > 0 ? `; ${failed} deployment(s) in progress failed` : '') +
          (detached > 0 ? `; ${detached} deployment(s) kept as history, in no server's metadata` : ''),
        { deployments_failed: failed, deployments_detached: detached },
      ),
    );
    publish(topics.credential(found.access_key_id));
    // Its document (which holds the revoked credential) is dropped from every replica's memory.
    publish(topics.serverDeleted(found.id));
  }

  /** Drops a deleted server from this replica's caches; called after the delete committed. */
  forgetDeleted(row: ServerRow): void {
    this.forgetAccessKey(row.access_key_id);
    this.seen.forget(row.id);
    this.rows.delete(row.id);
  }

  /** Drops a cached credential (called on delete, and by the feed for other replicas). */
  forgetAccessKey(accessKeyId: string): void {
    this.revocations++;
    const identity = this.byAccessKey.get(accessKeyId);
    this.byAccessKey.delete(accessKeyId);
    if (identity) this.rows.delete(identity.serverId);
  }

  /**
   * Keeps the caches true to the store when another replica wrote it: a revoked credential is
   * dropped, and a deleted server's row (a server registered again under its id must not get the old
   * credential in its document); after a possibly missed change (ANY_TOPIC), everything cached is dropped.
   */
  onFeedTopic(topic: string): void {
    if (topic === ANY_TOPIC) {
      this.revocations++;
      this.byAccessKey.clear();
      this.rows.clear();
    } else if (topic.startsWith(CREDENTIAL_TOPIC)) {
      this.forgetAccessKey(topic.slice(CREDENTIAL_TOPIC.length));
    } else if (topic.startsWith(SERVER_DELETED_TOPIC)) {
      this.rows.delete(topic.slice(SERVER_DELETED_TOPIC.length));
    }
  }

  /**
   * Resolves `<access key id>:<secret>` to an identity, or null when it is not valid. The derived
   * secret is cached with the identity, so a known agent costs one constant-time compare.
   */
  async authenticate(accessKeyId: string, secret: string, compare: (a: string, b: string) => boolean): Promise<AgentIdentity | null> {
    let identity = this.byAccessKey.get(accessKeyId);
    if (identity) return compare(secret, identity.secret) ? identity : null;
    const expected = this.secrets.agentSecret(accessKeyId);
    if (!compare(secret, expected)) return null;
    const revocations = this.revocations;
    const row = await this.byAccessKeyId(accessKeyId);
    if (!row) return null;
    identity = { serverId: row.id, projectId: row.project_id, accessKeyId, secret: expected };
    // A revocation (this server deleted through another replica) that arrived while the row was read
    // must not be undone by caching that row: this call may still pass, the next ones re-read.
    if (revocations !== this.revocations) return identity;
    if (this.byAccessKey.size > 100_000) this.byAccessKey.clear();
    this.byAccessKey.set(accessKeyId, identity);
    return identity;
  }

  /** Notes that a server's agent called; written to the store in batches. */
  touch(serverId: string): void {
    this.seen.touch(serverId);
  }

  /** Writes pending last-seen times; when the write fails they stay pending and it throws. */
  flushSeen(): Promise<void> {
    return this.seen.flush();
  }

  /** The last time a server's agent called, including times not flushed yet. */
  lastSeen(serverId: string, stored: string | null): string | null {
    return this.seen.lastSeen(serverId, stored);
  }

  private toApi(row: ServerRow): Server {
    const lastSeen = this.lastSeen(row.id, row.last_seen_at);
    const placement = placementOf(row, 'server');
    return {
      id: row.id,
      name: row.name,
      project_id: row.project_id,
      access_key_id: row.access_key_id,
      software_config_transport: row.config_transport,
      stack_id: row.stack_id,
      stack_name: placement.stackName,
      resource_name: placement.resourceName,
      creation_time: heatTime(new Date(row.created_at)),
      last_seen: lastSeen ? heatTime(new Date(lastSeen)) : null,
    };
  }

  /**
   * The identity of an access key whose credential was verified before (cached), or undefined. A
   * synchronous `authenticate` for hot paths: the caller must still compare the secret with
   * `identity.secret` in constant time.
   */
  cachedIdentity(accessKeyId: string): AgentIdentity | undefined {
    return this.byAccessKey.get(accessKeyId);
  }
}
