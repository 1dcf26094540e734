import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { PageQuery, ProjectId, ServerCreate, ServerId } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { BODY_LIMITS } from '../limits.ts';

const Params = Type.Object({ project_id: ProjectId });
const ItemParams = Type.Object({ project_id: ProjectId, id: ServerId });

/** /v1/{project}/servers: register, list, show and delete the VMs. */
export const serverRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post(
    '/servers',
    { bodyLimit: BODY_LIMITS.small, schema: { tags: ['servers'], params: Params, body: ServerCreate } },
    async (request, reply) => {
      const created = await services.servers.create(request.params.project_id, request.body);
      return reply.code(201).send(created);
    },
  );
  app.get('/servers', { schema: { tags: ['servers'], params: Params, querystring: PageQuery } }, async (request) => ({
    servers: await services.servers.list(request.params.project_id, request.query.limit, request.query.marker),
  }));
  app.get('/servers/:id', { schema: { tags: ['servers'], params: ItemParams } }, async (request) => ({
    server: await services.servers.get(request.params.project_id, request.params.id),
  }));
  app.delete('/servers/:id', { schema: { tags: ['servers'], params: ItemParams } }, async (request, reply) => {
    await services.servers.delete(request.params.project_id, request.params.id);
    return reply.code(204).send();
  });
};
