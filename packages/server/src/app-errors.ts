import { STATUS_CODES, maxHeaderSize, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorBody } from '@hearth/protocol';
import { HearthError, isHearthError } from './domain/errors.ts';
import { syntaxReason } from './body-parser.ts';
import { isStoreFull, isStoreUnavailable, isUnstorableText, isValueTooLong } from './store/unavailable.ts';
import { cfnErrorReply, cfnFormatOfUrl, isCfnUrl } from './routes/cfn/errors.ts';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Request Entity Too Large',
  415: 'Unsupported Media Type',
  431: 'Request Header Fields Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  507: 'Insufficient Storage',
};

/** The body of a coded error, in Heat's outer shape. */
export function errorBody(error: HearthError): ErrorBody {
  const body: ErrorBody = {
    code: error.statusCode,
    title: TITLES[error.statusCode] ?? 'Error',
    explanation: error.message,
    error: { code: error.code, type: error.code, message: error.message },
  };
  if (Object.keys(error.details).length > 0) body.error.details = error.details;
  return body;
}

/**
 * The `Retry-After` (seconds) of an error a client should retry: hearth-server stopping (another
 * replica, or this one restarted, answers within a second), its database unreachable, or a limit
 * of the sender's (the wait its error names).
 */
export function retryAfterSeconds(error: HearthError): number | undefined {
  if (error.code === 'ERR_SERVER_SHUTTING_DOWN') return 1;
  if (error.code === 'ERR_STORE_UNAVAILABLE') return 5;
  if (error.code === 'ERR_RATE_LIMITED') return Number(error.details.retry_after);
  return undefined;
}

/** Maps any error thrown while handling a request to a coded error. */
export function toHearthError(error: FastifyError | Error, requestId: string, bodyLimit?: number): HearthError {
  if (isHearthError(error)) return error;
  // The database is down or restarting: retry later (a signal was not committed, so it is not acknowledged).
  if (isStoreUnavailable(error)) return new HearthError('ERR_STORE_UNAVAILABLE');
  if (isStoreFull(error)) return new HearthError('ERR_STORE_FULL');
  if (isValueTooLong(error))
    return new HearthError('ERR_REQUEST_INVALID', { reason: 'a value is longer than hearth stores for that field' });
  if (isUnstorableText(error)) return new HearthError('ERR_REQUEST_INVALID', { reason: 'a text value contains a NUL character' });
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    return new HearthError('ERR_REQUEST_INVALID', { reason: error.message });
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new HearthError('ERR_REQUEST_BODY_TOO_LARGE', { limit: bodyLimit ?? 'allowed' });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new HearthError('ERR_REQUEST_MEDIA_TYPE', { type: 'given' });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new HearthError('ERR_REQUEST_BODY_MALFORMED', { reason: 'the body is empty but Content-Type says JSON' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new HearthError('ERR_REQUEST_INVALID', { reason: 'Content-Length does not match the body' });
    default:
      break;
  }
  if (error instanceof SyntaxError || fastifyError.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new HearthError('ERR_REQUEST_BODY_MALFORMED', { reason: syntaxReason(error) });
  }
  const status = fastifyError.statusCode ?? 500;
  if (status >= 400 && status < 500) return new HearthError('ERR_REQUEST_INVALID', { reason: error.message });
  return new HearthError('ERR_INTERNAL', { request_id: requestId });
}

/** The methods a 405 may name in its Allow header. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * The methods that have a route at `path`, other than the one asked: a path that exists under
 * another method is a 405 with an Allow header, as Heat answers, not a 404. Asked of fastify's own
 * router, and only from the not-found handler: the routes that match pay nothing for it.
 */
function allowedMethods(app: FastifyInstance, method: string, path: string): string[] {
  return METHODS.filter((other) => other !== method && app.findRoute({ method: other, url: path }) !== null);
}

/**
 * A coded error's Content-Type and body for a request to `url`: a CFN error body under the CFN API's
 * paths (XML, or JSON when the query says `ContentType=JSON`), hearth's JSON body everywhere else.
 */
export function codedReply(error: HearthError, url: string | undefined): { contentType: string; body: string } {
  if (url !== undefined && isCfnUrl(url)) return cfnErrorReply(error, cfnFormatOfUrl(url));
  return { contentType: 'application/json; charset=utf-8', body: JSON.stringify(errorBody(error)) };
}

/** Answers a request with a coded error, in the shape its path's API answers (codedReply), with its Retry-After. */
export function sendCoded(request: FastifyRequest, reply: FastifyReply, error: HearthError): FastifyReply {
  const retryAfter = retryAfterSeconds(error);
  if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
  const { contentType, body } = codedReply(error, request.url);
  return reply.code(error.statusCode).type(contentType).send(body);
}

/** The coded error for what a request failed with, logged as its kind deserves (a 500's cause in full, others by code). */
export function codedRequestError(error: FastifyError | Error, request: FastifyRequest): HearthError {
  // A client that closed its connection before its body arrived (killed, timed out) fails the read
  // with Node's "aborted", code ECONNRESET, which is also how a lost database connection fails: it
  // was logged as a database outage. Nobody reads this answer; the log says what happened.
  const coded =
    request.raw.readableAborted && !isHearthError(error)
      ? new HearthError('ERR_REQUEST_INVALID', { reason: 'the client closed the connection before sending the whole body' })
      : toHearthError(error, request.id, request.routeOptions.bodyLimit);
  if (coded.statusCode >= 500 && coded.code === 'ERR_INTERNAL') request.log.error({ err: error }, 'request failed');
  else if (coded.code === 'ERR_STORE_UNAVAILABLE') request.log.warn({ code: coded.code, reason: error.message }, coded.message);
  else request.log.info({ code: coded.code }, coded.message);
  return coded;
}

/** Installs the error and not-found handlers: every failure is a coded error (JSON, or CFN's shape under its paths), never a crash. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    void sendCoded(request, reply, codedRequestError(error, request));
  });
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?', 1)[0] ?? '/';
    const allowed = allowedMethods(app, request.method, path);
    if (allowed.length > 0) {
      void reply.header('allow', allowed.join(', '));
      void sendCoded(request, reply, new HearthError('ERR_METHOD_NOT_ALLOWED', { method: request.method, path }));
      return;
    }
    void sendCoded(request, reply, new HearthError('ERR_ROUTE_NOT_FOUND', { method: request.method, path }));
  });
}

/**
 * What Node's HTTP parser refused, as a coded error; the error's code is the parser's (HPE_*) or Node's. Node's
 * timeout code is the headers' here: fastify turns Node's whole-request limit off (requestTimeout 0), so only
 * headers slower than `headersTimeout` get it.
 */
export function clientErrorOf(code: string, timeouts: { headersTimeout: number }): HearthError {
  if (code === 'HPE_HEADER_OVERFLOW') return new HearthError('ERR_REQUEST_HEADERS_TOO_LARGE', { limit: maxHeaderSize });
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new HearthError('ERR_REQUEST_TIMEOUT', { headers_seconds: timeouts.headersTimeout / 1000 });
  return new HearthError('ERR_REQUEST_INVALID', { reason: `it is not well-formed HTTP/1.1 (${code})` });
}

/** A request line's method and target, e.g. `GET` and `/v1/?Action=…` of `GET /v1/?Action=… HTTP/1.1`; only that much of the bytes is read. */
function requestLine(packet: unknown): { method?: string; target?: string } {
  const line = Buffer.isBuffer(packet) ? packet.subarray(0, maxHeaderSize).toString('latin1').split('\r\n', 1)[0] : undefined;
  const match = line === undefined ? null : /^([A-Z]+) (\/\S*)?/.exec(line);
  return match ? { method: match[1], target: match[2] } : {};
}

/**
 * What a clientErrorHandler reports of a request it answered: the response Node had started for it (when its
 * headers were read and a bad or slow body was refused), else the method its request line names (unchecked
 * bytes), and the status sent.
 */
export type ClientErrorAnswered = (response: ServerResponse | undefined, method: string | undefined, status: number) => void;

/**
 * fastify's `clientErrorHandler`: a request Node's parser refuses (headers over 16 KiB, a malformed
 * request line, bad chunked encoding, a slow client) gets the same coded body as every other error
 * to its path (codedReply: CFN's shape under the CFN API's paths), then the connection closes (the
 * parser cannot resume mid-stream). Only the parser's code is logged, never the error itself: its
 * `rawPacket` holds the request's bytes, credentials included. Each request answered is reported to
 * `answered` (the request metrics: no response `finish` tells of these bytes written to the socket).
 */
export function clientErrorHandler(answered: ClientErrorAnswered) {
  return function answerClientError(this: FastifyInstance, error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void {
    // A reset connection has nobody to answer.
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const coded = clientErrorOf(error.code ?? 'unknown', this.server);
    this.log.debug({ code: error.code }, coded.message);
    // As Node answers: only when no response has started on this connection, else the peer would read
    // this one in the middle of the other.
    const inFlight = (socket as Socket & { _httpMessage?: (ServerResponse & { req?: IncomingMessage }) | null })._httpMessage ?? undefined;
    if (!socket.writable || inFlight?.headersSent) return void socket.destroy();
    // The request's response when its headers were read (a bad or slow body): its path is the request's; else
    // the path (and method) are its request line's, when this packet has it.
    const routed = inFlight?.req ? inFlight : undefined;
    const line = routed ? {} : requestLine(error.rawPacket);
    const { contentType, body } = codedReply(coded, routed?.req?.url ?? line.target);
    // Then, as Node does, close at once: the client may still be sending and the parser cannot resume.
    socket.write(
      `HTTP/1.1 ${coded.statusCode} ${STATUS_CODES[coded.statusCode]}\r\nContent-Type: ${contentType}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    socket.destroy();
    answered(routed, line.method, coded.statusCode);
  };
}
