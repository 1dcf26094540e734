// An agent's poll of an unchanged document, answered before fastify routes it. It is the request a
// fleet sends most (agents poll, and nearly every poll finds the document unchanged), and fastify's
// routing, hooks, schema and reply for it cost more than the answer itself: side by side on a slow
// host, a 304 took 74 µs of CPU through the route and 61 µs here (test/bench/README.md, 2026-11-28
// 20:06). Only the exact request that needs nothing but caches is answered here, with the very reply
// the route gives; anything else, and anything wrong, goes on to fastify, which answers it as it
// always does (its errors, its checks, its logs).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Services } from '../../services.ts';
import { markAnswered, type RoutedRequest } from '../../request-metrics.ts';
import { ifNoneMatchHits } from '../etag.ts';

/** The metadata route, as the request metrics name it. */
const METADATA_ROUTE: RoutedRequest = { method: 'GET', routeOptions: { url: '/v1/guest/metadata' } };

/**
 * Answers the request with 304 when it is an agent's plain poll of the document it already has, and
 * says whether it did. That is: `GET /v1/guest/metadata` with no query (no long-poll) and no body,
 * `If-None-Match` naming the current document of a server whose credential is cached and matches,
 * while the app is not closing. The route's own path does exactly this for it (guest/index.ts,
 * `sendMetadata`): the same headers, metrics and last-seen time.
 */
function answeredUnchanged(services: Services, isClosing: () => boolean, request: IncomingMessage, response: ServerResponse): boolean {
  if (request.method !== 'GET' || request.url !== METADATA_ROUTE.routeOptions.url || isClosing()) return false;
  const headers = request.headers;
  const ifNoneMatch = headers['if-none-match'];
  if (ifNoneMatch === undefined || headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined) return false;
  const start = performance.now();
  const agent = services.auth.cachedAgent(headers);
  const snapshot = agent && services.metadata.cached(agent.serverId);
  if (!snapshot || !ifNoneMatchHits(ifNoneMatch, snapshot.etag)) return false;
  services.metrics.metadataReplies.inc({ status: '304' });
  markAnswered(response, services.metrics, METADATA_ROUTE, start);
  response.writeHead(304, { etag: snapshot.etag, 'last-modified': snapshot.lastModified, 'cache-control': 'no-cache' });
  response.end();
  return true;
}

/**
 * Puts `answeredUnchanged` in front of the app's request handler on its HTTP server. Only while the
 * app logs no requests: fastify logs each one it answers at `info`, and these must not go missing
 * from that log.
 */
export function answerUnchangedPollsFirst(server: Server, services: Services, isClosing: () => boolean): void {
  const handlers = server.listeners('request') as ((request: IncomingMessage, response: ServerResponse) => void)[];
  const [fastify] = handlers;
  if (handlers.length !== 1 || fastify === undefined) throw new Error(`expected fastify's one request handler, found ${handlers.length}`);
  server.removeListener('request', fastify);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    let answered: boolean;
    try {
      answered = answeredUnchanged(services, isClosing, request, response);
    } catch {
      // A throw here would end the process (no fastify around it): unless a reply went out, the route answers.
      answered = response.headersSent;
      if (answered) response.destroy();
    }
    if (!answered) fastify.call(server, request, response);
  });
}
