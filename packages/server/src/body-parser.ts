import type { FastifyInstance } from 'fastify';
import { HearthError } from './domain/errors.ts';

/**
 * Bodies sent with another Content-Type (or none) are parsed as JSON all the same: cfn-signal
 * sends no Content-Type and curl's `-d` says form-urlencoded, yet both carry JSON. An empty body
 * is no body.
 */
export function installLenientJsonParser(app: FastifyInstance): void {
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch (error) {
      done(new HearthError('ERR_REQUEST_BODY_MALFORMED', { reason: (error as Error).message }), undefined);
    }
  });
}
