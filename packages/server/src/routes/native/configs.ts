import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { clampListLimit, ConfigListQuery, ProjectId, SoftwareConfigCreate, Uuid } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { BODY_LIMITS } from '../limits.ts';

const Params = Type.Object({ project_id: ProjectId });
const ItemParams = Type.Object({ project_id: ProjectId, id: Uuid });

/** /v1/{project}/software_configs with Heat's shapes and status codes (configs are immutable). */
export const configRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/software_configs',
    { bodyLimit: BODY_LIMITS.config, schema: { tags: ['software_configs'], params: Params, body: SoftwareConfigCreate } },
    async (request) => ({ software_config: await services.configs.create(request.params.project_id, request.body) }),
  );
  // A limit above the count lists everything, as in Heat (heatclient users pass big ones).
  app.get(
    '/software_configs',
    { schema: { tags: ['software_configs'], params: Params, querystring: ConfigListQuery } },
    async (request) => ({
      software_configs: await services.configs.list(request.params.project_id, clampListLimit(request.query.limit), request.query.marker),
    }),
  );
  app.get('/software_configs/:id', { schema: { tags: ['software_configs'], params: ItemParams } }, async (request) => ({
    software_config: await services.configs.get(request.params.project_id, request.params.id),
  }));
  app.delete('/software_configs/:id', { schema: { tags: ['software_configs'], params: ItemParams } }, async (request, reply) => {
    await services.configs.delete(request.params.project_id, request.params.id);
    return reply.code(204).send();
  });
};
