// Counts and times every HTTP request (hearth_http_requests_total, hearth_http_request_duration_seconds)
// without a fastify `onResponse` hook. Such a hook makes fastify add and remove two listeners on every
// response and run a hook chain when it finishes; on a slow CPU, side by side, that cost an agent's
// metadata 304 5-13 µs of its ~90 (test/bench/README.md, 2026-11-28 14:05). Node publishes every
// finished response of its HTTP servers on the `http.server.response.finish` diagnostics channel;
// one subscriber for the whole process records each response that an app marked when its request
// came in.
import { subscribe } from 'node:diagnostics_channel';
import { METHODS, type ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Metrics } from './metrics.ts';

/** What the metrics read of a request once it is answered: fastify's, or a reply's answered before fastify (see markAnswered). */
export interface RoutedRequest {
  readonly method: string;
  /** The route's pattern; undefined for a request no route matched. */
  readonly routeOptions: { readonly url?: string | undefined };
}

/** What an app notes on a response when its request comes in, read back when the response finishes. */
interface Timing {
  readonly metrics: Metrics;
  readonly request: RoutedRequest;
  /** performance.now() when the request came in. */
  readonly start: number;
}

const kTiming = Symbol('hearth.requestTiming');
type TimedResponse = ServerResponse & { [kTiming]?: Timing | undefined };

/** Records a finished response once (a response finishes once; the mark is cleared all the same). */
function record(response: TimedResponse): void {
  const timing = response[kTiming];
  if (timing === undefined) return;
  response[kTiming] = undefined;
  const { metrics, request, start } = timing;
  const route = request.routeOptions.url ?? 'unmatched';
  metrics.requests.inc({ route, method: request.method, status: String(response.statusCode) });
  metrics.requestSeconds.observe({ route }, (performance.now() - start) / 1000);
}

let subscribed = false;

/** The process-wide subscriber: responses of servers no app marked (another HTTP server) are skipped. */
function subscribeOnce(): void {
  if (subscribed) return;
  subscribed = true;
  subscribe('http.server.response.finish', (message) => record((message as { response: TimedResponse }).response));
}

/**
 * Counts and times each request the app answers, by route (the route's pattern, `unmatched` for a
 * 404), method and status, like an `onResponse` hook would: when the response has been sent. A
 * request injected with `app.inject` (tests) goes through no HTTP server: its response is watched
 * with a listener instead.
 */
export function installRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  subscribeOnce();
  // A callback hook, not an async one: no promise per request.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done) => {
    const response = reply.raw as TimedResponse;
    markAnswered(response, metrics, request, performance.now());
    if (!(request.raw.socket instanceof Socket)) response.once('finish', () => record(response));
    done();
  });
}

/**
 * Counts and times a response of an HTTP server when it finishes, as the route `request` names:
 * for a reply sent before fastify saw the request (routes/guest/unchanged-poll.ts), the same series
 * fastify's route would have counted it in. `start` is performance.now() when the request came in.
 * Recorded only in an app that called installRequestMetrics (which subscribes to the channel).
 */
export function markAnswered(response: ServerResponse, metrics: Metrics, request: RoutedRequest, start: number): void {
  (response as TimedResponse)[kTiming] = { metrics, request, start };
}

/**
 * Counts a request Node's HTTP parser refused, answered by writing to its socket (app-errors.ts's
 * clientErrorHandler), which no response `finish` reports. One whose headers were read (a bad or slow
 * body) has its response marked: it is counted and timed under its route, with the status sent. One
 * refused in its request line or headers never reached fastify: it is counted as `unmatched`, with
 * its request line's method when Node knows it (else `unknown`: the label takes no unchecked bytes),
 * and not timed (when it began is not known).
 */
export function recordRefused(metrics: Metrics, response: ServerResponse | undefined, method: string | undefined, status: number): void {
  const timed: TimedResponse | undefined = response;
  if (timed?.[kTiming] !== undefined) {
    timed.statusCode = status;
    record(timed);
    return;
  }
  const known = method !== undefined && METHODS.includes(method) ? method : 'unknown';
  metrics.requests.inc({ route: 'unmatched', method: known, status: String(status) });
}
