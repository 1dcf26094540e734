import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DeploymentSignal, Heartbeat, MetadataQuery, Uuid } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';
import { BODY_LIMITS } from '../limits.ts';
import { abortOnClose } from '../abort.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { MetadataSnapshot } from '../../domain/metadata.ts';
import { ifNoneMatchHits } from '../etag.ts';
import { ANY_TOPIC, topics } from '../../feed/feed.ts';
import { guestMetricRoutes } from './metrics.ts';
import { guestAuthHook, guestPrincipal, guestRevocationHook, onlyAgent, type Agent } from './auth-hook.ts';
import { revokedInstead } from '../resource-actions.ts';
import type { Principal } from '../../auth/principal.ts';

const DeploymentParams = Type.Object({ id: Uuid });
const CapabilityQuery = Type.Object(
  {
    token: Type.Optional(Type.String({ maxLength: 128 })),
    action: Type.Optional(Uuid),
    key: Type.Optional(Type.String({ pattern: '^[0-9a-f]{32}$' })),
  },
  { additionalProperties: false },
);
const SignalHeaders = Type.Object({ 'idempotency-key': Type.Optional(Type.String({ minLength: 1, maxLength: 120 })) });

/** A signal or heartbeat with no body at all counts as `{}` (Heat treats a null body so). */
async function emptyBodyIsEmptyObject(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

/** The calling agent, as `guestAuthHook` authenticated it (the metadata route takes no capability). */
function agentOf(request: FastifyRequest): Agent {
  return onlyAgent(guestPrincipal(request));
}

/** Replies with a metadata snapshot: 304 when `If-None-Match` names it, else the document. */
function sendMetadata(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  agent: Agent,
  snapshot: MetadataSnapshot,
  ifNoneMatch: string | undefined,
): FastifyReply {
  void reply.header('etag', snapshot.etag).header('last-modified', snapshot.lastModified).header('cache-control', 'no-cache');
  if (ifNoneMatchHits(ifNoneMatch, snapshot.etag)) {
    services.metrics.metadataReplies.inc({ status: '304' });
    return reply.code(304).send();
  }
  services.metrics.metadataReplies.inc({ status: '200' });
  if (snapshot.unfetched.length > 0) {
    const fetched = snapshot.unfetched;
    services.metadata.clearUnfetched(agent.serverId);
    services.signals.markFetched(fetched).catch((error: unknown) => request.log.error({ err: error }, 'could not record the fetch'));
  }
  return reply.type('application/json').send(snapshot.body);
}

/**
 * An agent's credential watched for the life of one metadata reply: revoked when its server is
 * deleted (the feed's revocation topic) or, after a resync of the feed, when the store no longer has
 * it (a live one is left alone: ending every long-poll at once would bring all agents back together).
 */
interface CredentialWatch {
  /** Aborted once the credential is known to be revoked. */
  readonly revoked: AbortSignal;
  /** Throws ERR_AUTH_INVALID unless the credential is still live: checked last, just before a reply is sent. */
  assertLive(): Promise<void>;
  stop(): void;
}

function watchCredential(services: Services, agent: Agent): CredentialWatch {
  const revoked = new AbortController();
  let recheck: Promise<void> | undefined;
  const stillStored = async () => {
    if (!(await services.servers.byAccessKeyId(agent.accessKeyId))) revoked.abort();
  };
  const stop = services.feed.subscribe(topics.credential(agent.accessKeyId), (topic) => {
    if (topic !== ANY_TOPIC) return revoked.abort();
    recheck = stillStored().catch(() => undefined);
  });
  return {
    revoked: revoked.signal,
    async assertLive() {
      // A resync rebuilds the document too, maybe first (a deleted server's differs): the re-check decides.
      await recheck;
      // A cached identity is a live one (a revocation drops it); without it, say the store. The
      // revocation may also have come before this watch began (while the credential was checked).
      if (!revoked.signal.aborted && !services.servers.cachedIdentity(agent.accessKeyId)) await stillStored();
      if (revoked.signal.aborted) throw new HearthError('ERR_AUTH_INVALID');
    },
    stop,
  };
}

/**
 * The metadata reply that needs the store or a wait: a document to build, a long-poll. The agent's
 * server may be deleted meanwhile (even before this began): its credential is watched from the
 * start and checked again before anything is sent, so a DELETE that answered 204 is never followed
 * by the deleted server's document.
 */
async function sendMetadataLater(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  agent: Agent,
  ifNoneMatch: string | undefined,
  wait: number,
  waiting: WaitingPolls,
): Promise<FastifyReply> {
  const watch = watchCredential(services, agent);
  try {
    let snapshot = services.metadata.cached(agent.serverId) ?? (await services.metadata.snapshot(agent.projectId, agent.serverId));
    if (wait > 0 && ifNoneMatchHits(ifNoneMatch, snapshot.etag) && !watch.revoked.aborted) {
      waiting.enter(agent.accessKeyId, reply);
      try {
        snapshot = await waitWhileValid(services, request, reply, agent, watch, snapshot.etag, wait);
      } finally {
        waiting.leave(agent.accessKeyId);
      }
    }
    await watch.assertLive();
    return sendMetadata(services, request, reply, agent, snapshot, ifNoneMatch);
  } finally {
    watch.stop();
  }
}

/**
 * Long-polls one credential may hold waiting at once (a real agent holds one or two). Each holds a
 * connection, and connections are capped below the open-files limit: without this, one VM (a
 * buggy or compromised agent) could take them all and leave every other agent's connection refused.
 */
export const MAX_WAITING_PER_CREDENTIAL = 4;
/** The `Retry-After` of a long-poll refused for MAX_WAITING_PER_CREDENTIAL. */
const WAITING_RETRY_AFTER_SECONDS = 5;

/**
 * The long-polls waiting per credential, on this replica: one entry per credential that has one
 * waiting (so bounded by the connections), dropped when its last one ends.
 */
class WaitingPolls {
  private readonly waiting = new Map<string, number>();

  /** Counts one more waiting long-poll of the credential; throws ERR_RATE_LIMITED (with Retry-After) past the cap. */
  enter(accessKeyId: string, reply: FastifyReply): void {
    const count = this.waiting.get(accessKeyId) ?? 0;
    if (count >= MAX_WAITING_PER_CREDENTIAL) {
      // Closed too: a refused poll left open on keep-alive would hold the connection all the same.
      void reply.header('connection', 'close');
      throw new HearthError('ERR_RATE_LIMITED', { retry_after: WAITING_RETRY_AFTER_SECONDS });
    }
    this.waiting.set(accessKeyId, count + 1);
  }

  /** Counts one waiting long-poll of the credential less. */
  leave(accessKeyId: string): void {
    const count = (this.waiting.get(accessKeyId) ?? 1) - 1;
    if (count > 0) this.waiting.set(accessKeyId, count);
    else this.waiting.delete(accessKeyId);
  }
}

/** The `Retry-After` of the long-polls the app ends when it closes. */
const SHUTDOWN_RETRY_AFTER_SECONDS = 1;

/**
 * A long-poll's wait for a new document, ended early when the agent's credential is revoked (its
 * server deleted while it waits): that credential then gets ERR_AUTH_INVALID (from the caller's
 * last check), as its next poll would, not a 304 (or a document) after the whole wait.
 */
async function waitWhileValid(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  agent: Agent,
  watch: CredentialWatch,
  etag: string,
  wait: number,
): Promise<MetadataSnapshot> {
  const closed = abortOnClose(request, reply);
  const snapshot = await services.metadata.waitForNew(
    agent.projectId,
    agent.serverId,
    etag,
    wait * 1000,
    AbortSignal.any([closed, watch.revoked]),
  );
  if (closed.aborted && !watch.revoked.aborted) {
    // The app is closing (an agent that went away sees nothing): marked so, this early 304 is no
    // proxy declining to hold, and the agent asks again in a second or so (the server restarted, or
    // another replica), on a new connection.
    void reply.header('retry-after', String(SHUTDOWN_RETRY_AFTER_SECONDS)).header('connection', 'close');
  }
  return snapshot;
}

/**
 * A heartbeat's body limit: any body the schema takes, as JSON.stringify writes it, fits. Its 4096
 * characters of message take up to 24 KiB once control characters are escaped (`\u001b`), or 48 KiB
 * if every one is written as a surrogate pair; a heartbeat refused for that would not extend its deadline.
 */
const HEARTBEAT_BODY_LIMIT = 64 * 1024;

/**
 * Rethrows a signal's or heartbeat's failure, as the 401 of a revoked credential when an agent's
 * server was deleted after guestRevocationHook checked it (see revokedInstead). A `?token=` URL needs
 * no look-up: the signal's transaction itself refuses one its server's delete revoked.
 */
function agentRevokedInstead(services: Services, principal: Principal, error: unknown): Promise<never> {
  if (principal.kind !== 'agent') throw error;
  const live = async () => (await services.servers.byAccessKeyId(principal.accessKeyId)) !== undefined;
  return revokedInstead(error, live, () => new HearthError('ERR_AUTH_INVALID'));
}

/** What agents call: their metadata (ETag, long-poll), deployment signals and heartbeats. */
export const guestRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const tags = ['guest'];
  const waiting = new WaitingPolls();
  app.addHook('onRequest', guestAuthHook(services));
  app.addHook('preHandler', guestRevocationHook(services));
  // Registered here, under the hook, so that metrics are authenticated before their body is read too.
  await app.register(guestMetricRoutes, { services });
  app.get('/metadata', { schema: { tags, querystring: MetadataQuery } }, (request, reply) => {
    // An agent's poll: answered without a promise when its document is cached and it does not ask
    // to wait for a change (nearly every poll, most of them 304s).
    const ifNoneMatch = request.headers['if-none-match'];
    const wait = request.query.wait ?? 0;
    const agent = agentOf(request);
    const snapshot = services.metadata.cached(agent.serverId);
    // Without a cached identity the credential may have been revoked since the auth hook ran: the later path checks.
    if (snapshot && !(wait > 0 && ifNoneMatchHits(ifNoneMatch, snapshot.etag)) && services.servers.cachedIdentity(agent.accessKeyId)) {
      return sendMetadata(services, request, reply, agent, snapshot, ifNoneMatch);
    }
    return sendMetadataLater(services, request, reply, agent, ifNoneMatch, wait, waiting);
  });

  app.post(
    '/deployments/:id/signal',
    {
      bodyLimit: BODY_LIMITS.signal,
      preValidation: emptyBodyIsEmptyObject,
      schema: { tags, params: DeploymentParams, querystring: CapabilityQuery, headers: SignalHeaders, body: DeploymentSignal },
    },
    async (request) => {
      const principal = guestPrincipal(request);
      try {
        const ack = await services.signals.signal(principal, request.params.id, request.body, request.headers['idempotency-key']);
        services.metrics.signals.inc({ result: ack.duplicate ? 'duplicate' : ack.status.toLowerCase() });
        return ack;
      } catch (error) {
        services.metrics.signals.inc({ result: 'rejected' });
        return agentRevokedInstead(services, principal, error);
      }
    },
  );

  app.post(
    '/deployments/:id/heartbeat',
    {
      bodyLimit: HEARTBEAT_BODY_LIMIT,
      preValidation: emptyBodyIsEmptyObject,
      schema: { tags, params: DeploymentParams, querystring: CapabilityQuery, body: Heartbeat },
    },
    async (request) => {
      const principal = guestPrincipal(request);
      try {
        return await services.signals.heartbeat(principal, request.params.id, request.body);
      } catch (error) {
        return agentRevokedInstead(services, principal, error);
      }
    },
  );
};
