import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { clampListLimit, ConfigListQuery, ProjectId, SoftwareConfigCreate } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { BODY_LIMITS } from '../limits.ts';
import { HeatItemParams, IgnoredQueryValue, knownUuid } from './heat-params.ts';

const Params = Type.Object({ project_id: ProjectId });
const ListQuery = Type.Object(ConfigListQuery.properties, { additionalProperties: IgnoredQueryValue });

/** /v1/{project}/software_configs with Heat's shapes and status codes (configs are immutable). */
export const configRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/software_configs',
    { bodyLimit: BODY_LIMITS.config, schema: { tags: ['software_configs'], params: Params, body: SoftwareConfigCreate } },
    async (request) => ({ software_config: await services.configs.create(request.params.project_id, request.body) }),
  );
  // A limit above the count lists everything, as in Heat (heatclient users pass big ones).
  app.get('/software_configs', { schema: { tags: ['software_configs'], params: Params, querystring: ListQuery } }, async (request) => ({
    software_configs: await services.configs.list(
      request.params.project_id,
      clampListLimit(request.query.limit),
      // A marker that is not a UUID names no config: 404 as an unknown one (an empty one is none, as in Heat).
      request.query.marker ? knownUuid(request.query.marker, 'ERR_CONFIG_NOT_FOUND') : undefined,
    ),
  }));
  app.get('/software_configs/:id', { schema: { tags: ['software_configs'], params: HeatItemParams } }, async (request) => ({
    software_config: await services.configs.get(request.params.project_id, knownUuid(request.params.id, 'ERR_CONFIG_NOT_FOUND')),
  }));
  app.delete('/software_configs/:id', { schema: { tags: ['software_configs'], params: HeatItemParams } }, async (request, reply) => {
    await services.configs.delete(request.params.project_id, knownUuid(request.params.id, 'ERR_CONFIG_NOT_FOUND'));
    return reply.code(204).send();
  });
};
