import type { FastifyError, FastifyInstance } from 'fastify';
import type { ErrorBody } from '@hearth/protocol';
import { HearthError, isHearthError } from './domain/errors.ts';
import { syntaxReason } from './body-parser.ts';
import { isStoreUnavailable, isUnstorableText, isValueTooLong } from './store/unavailable.ts';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Request Entity Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
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

/** Maps any error thrown while handling a request to a coded error. */
export function toHearthError(error: FastifyError | Error, requestId: string, bodyLimit?: number): HearthError {
  if (isHearthError(error)) return error;
  // The database is down or restarting: retry later (a signal was not committed, so it is not acknowledged).
  if (isStoreUnavailable(error)) return new HearthError('ERR_STORE_UNAVAILABLE');
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

/** Installs the error and not-found handlers: every failure is a coded JSON error, never a crash. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const coded = toHearthError(error, request.id, request.routeOptions.bodyLimit);
    if (coded.statusCode >= 500 && coded.code === 'ERR_INTERNAL') request.log.error({ err: error }, 'request failed');
    else if (coded.code === 'ERR_STORE_UNAVAILABLE') request.log.warn({ code: coded.code, reason: error.message }, coded.message);
    else request.log.info({ code: coded.code }, coded.message);
    void reply.code(coded.statusCode).send(errorBody(coded));
  });
  app.setNotFoundHandler((request, reply) => {
    const coded = new HearthError('ERR_ROUTE_NOT_FOUND', { method: request.method, path: request.url.split('?')[0] });
    void reply.code(404).send(errorBody(coded));
  });
}
