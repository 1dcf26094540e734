import type {} from '@fastify/swagger';
import type { FastifyPluginAsync } from 'fastify';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';

/** /healthz (the process answers), /readyz (the store answers) and /metrics (Prometheus). */
export const opsRoutes: FastifyPluginAsync<{ services: Services; isClosing: () => boolean }> = async (app, { services, isClosing }) => {
  app.get('/healthz', { schema: { tags: ['ops'] } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { tags: ['ops'] } }, async () => {
    if (isClosing()) throw new HearthError('ERR_SERVER_SHUTTING_DOWN');
    await services.store.ping();
    return { status: 'ready', store: services.store.dialect };
  });
  app.get('/metrics', { schema: { tags: ['ops'] } }, async (_request, reply) => {
    const text = await services.metrics.registry.metrics();
    return reply.type(services.metrics.registry.contentType).send(text);
  });
};
