import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AlarmCreate, MetricListQuery, ProjectId } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { BODY_LIMITS } from '../limits.ts';

const Params = Type.Object({ project_id: ProjectId });
const AlarmParams = Type.Object({ project_id: ProjectId, name: Type.String({ minLength: 1, maxLength: 255 }) });
const HistoryQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })) }, { additionalProperties: false });

/** /v1/{project}/alarms (threshold alarms, their history) and /v1/{project}/metrics (stored samples), for the operator. */
export const alarmRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const tags = ['alarms'];
  app.post('/alarms', { bodyLimit: BODY_LIMITS.small, schema: { tags, params: Params, body: AlarmCreate } }, async (request, reply) => {
    return reply.code(201).send({ alarm: await services.alarms.create(request.params.project_id, request.body) });
  });
  app.get('/alarms', { schema: { tags, params: Params } }, async (request) => ({
    alarms: await services.alarms.list(request.params.project_id),
  }));
  app.get('/alarms/:name', { schema: { tags, params: AlarmParams } }, async (request) => ({
    alarm: await services.alarms.get(request.params.project_id, request.params.name),
  }));
  app.get('/alarms/:name/history', { schema: { tags, params: AlarmParams, querystring: HistoryQuery } }, async (request) => ({
    history: await services.alarms.history(request.params.project_id, request.params.name, request.query.limit),
  }));
  app.delete('/alarms/:name', { schema: { tags, params: AlarmParams } }, async (request, reply) => {
    await services.alarms.delete(request.params.project_id, request.params.name);
    return reply.code(204).send();
  });
  app.get('/metrics', { schema: { tags: ['metrics'], params: Params, querystring: MetricListQuery } }, async (request) => ({
    samples: await services.metricSamples.list(request.params.project_id, request.query),
  }));
};
