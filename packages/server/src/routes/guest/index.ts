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

const DeploymentParams = Type.Object({ id: Uuid });
const CapabilityQuery = Type.Object(
  { token: Type.Optional(Type.String({ maxLength: 128 })), action: Type.Optional(Uuid) },
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

/** The metadata reply that needs the store or a wait: a document to build, a long-poll. */
async function sendMetadataLater(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  agent: Agent,
  ifNoneMatch: string | undefined,
  wait: number,
): Promise<FastifyReply> {
  let snapshot = services.metadata.cached(agent.serverId) ?? (await services.metadata.snapshot(agent.projectId, agent.serverId));
  if (wait > 0 && ifNoneMatchHits(ifNoneMatch, snapshot.etag)) {
    snapshot = await waitWhileValid(services, request, reply, agent, snapshot.etag, wait);
  }
  return sendMetadata(services, request, reply, agent, snapshot, ifNoneMatch);
}

/** The `Retry-After` of the long-polls the app ends when it closes. */
const SHUTDOWN_RETRY_AFTER_SECONDS = 1;

/**
 * A long-poll's wait for a new document, ended early when the agent's credential is revoked (its
 * server deleted while it waits): that credential then gets ERR_AUTH_INVALID, as its next poll
 * would, not a 304 (or a document) after the whole wait. After a resync of the feed the store says
 * whether the credential is still there; a live one keeps waiting.
 */
async function waitWhileValid(
  services: Services,
  request: FastifyRequest,
  reply: FastifyReply,
  agent: Agent,
  etag: string,
  wait: number,
): Promise<MetadataSnapshot> {
  const ended = new AbortController();
  const closed = abortOnClose(request, reply);
  closed.addEventListener('abort', () => ended.abort(), { once: true });
  let revoked = false;
  const revoke = () => {
    revoked = true;
    ended.abort();
  };
  let recheck: Promise<void> | undefined;
  const stop = services.feed.subscribe(topics.credential(agent.accessKeyId), (topic) => {
    if (topic !== ANY_TOPIC) return revoke();
    // A resync (the feed may have missed a revocation): re-check, and let a live credential keep
    // waiting; ending every long-poll at once would bring all agents back together.
    recheck = services.servers.byAccessKeyId(agent.accessKeyId).then(
      (server) => (server ? undefined : revoke()),
      () => undefined,
    );
  });
  let snapshot: MetadataSnapshot;
  try {
    snapshot = await services.metadata.waitForNew(agent.projectId, agent.serverId, etag, wait * 1000, ended.signal);
    // The same resync also rebuilt the document, which may finish first (a deleted server's differs):
    // the credential's answer decides before the document is sent.
    await recheck;
  } finally {
    stop();
  }
  if (revoked) throw new HearthError('ERR_AUTH_INVALID');
  if (closed.aborted) {
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

/** What agents call: their metadata (ETag, long-poll), deployment signals and heartbeats. */
export const guestRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const tags = ['guest'];
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
    if (snapshot && !(wait > 0 && ifNoneMatchHits(ifNoneMatch, snapshot.etag))) {
      return sendMetadata(services, request, reply, agent, snapshot, ifNoneMatch);
    }
    return sendMetadataLater(services, request, reply, agent, ifNoneMatch, wait);
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
        throw error;
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
      return services.signals.heartbeat(guestPrincipal(request), request.params.id, request.body);
    },
  );
};
