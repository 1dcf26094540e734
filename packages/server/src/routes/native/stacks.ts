import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { PageQuery, ProjectId, ResourceName, StackCreate, WaitConditionCreate, WaitConditionHeartbeat } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { BODY_LIMITS } from '../limits.ts';
import { abortOnClose } from '../abort.ts';
import { ifNoneMatchHits } from '../etag.ts';

const StackRef = Type.String({ minLength: 1, maxLength: 255 });
const Params = Type.Object({ project_id: ProjectId });
const StackParams = Type.Object({ project_id: ProjectId, stack: StackRef });
const StackIdParams = Type.Object({ project_id: ProjectId, stack: StackRef, stack_id: Type.String({ minLength: 1, maxLength: 64 }) });
const ConditionParams = Type.Object({ project_id: ProjectId, stack: StackRef, name: ResourceName });
/**
 * Heat's stack list: `limit` and `marker` page it; the other parameters heatclient sends (`sort_keys`,
 * `show_nested`, `global_tenant` from `--all-projects`, filters such as `status`) are accepted and
 * ignored, as before paging, so `openstack stack list` with any of its flags keeps working.
 */
const StackListQuery = Type.Object(
  { limit: PageQuery.properties.limit, marker: PageQuery.properties.marker },
  { additionalProperties: Type.Union([Type.String({ maxLength: 1024 }), Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 64 })]) },
);
const WaitQuery = Type.Object({ wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })) }, { additionalProperties: false });

/** /v1/{project}/stacks: stacks (namespaces with Heat's ids and ARNs) and their wait conditions. */
export const stackRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const tags = ['stacks'];
  app.post('/stacks', { bodyLimit: BODY_LIMITS.small, schema: { tags, params: Params, body: StackCreate } }, async (request, reply) => {
    return reply.code(201).send({ stack: await services.stacks.create(request.params.project_id, request.body.stack_name) });
  });
  app.get('/stacks', { schema: { tags, params: Params, querystring: StackListQuery } }, async (request) => ({
    stacks: await services.stacks.list(request.params.project_id, request.query.limit, request.query.marker),
  }));
  app.get('/stacks/:stack/:stack_id', { schema: { tags, params: StackIdParams } }, async (request) => {
    const { project_id: projectId, stack, stack_id: stackId } = request.params;
    return { stack: services.stacks.toApi(await services.stacks.resolveExact(projectId, stack, stackId)) };
  });
  app.delete('/stacks/:stack', { schema: { tags, params: StackParams } }, async (request, reply) => {
    await services.stacks.delete(request.params.project_id, request.params.stack);
    return reply.code(204).send();
  });
  app.delete('/stacks/:stack/:stack_id', { schema: { tags, params: StackIdParams } }, async (request, reply) => {
    const { project_id: projectId, stack, stack_id: stackId } = request.params;
    await services.stacks.resolveExact(projectId, stack, stackId);
    await services.stacks.delete(projectId, stackId);
    return reply.code(204).send();
  });

  const wcTags = ['wait_conditions'];
  app.post(
    '/stacks/:stack/wait_conditions',
    { bodyLimit: BODY_LIMITS.small, schema: { tags: wcTags, params: StackParams, body: WaitConditionCreate } },
    async (request, reply) => {
      const condition = await services.waitConditions.create(request.params.project_id, request.params.stack, request.body);
      return reply.code(201).send({ wait_condition: condition });
    },
  );
  app.get('/stacks/:stack/wait_conditions', { schema: { tags: wcTags, params: StackParams } }, async (request) => ({
    wait_conditions: await services.waitConditions.list(request.params.project_id, request.params.stack),
  }));
  // ETag and long-poll: with If-None-Match and ?wait=N, held until the condition changes (200) or N s pass (304).
  app.get(
    '/stacks/:stack/wait_conditions/:name',
    { schema: { tags: wcTags, params: ConditionParams, querystring: WaitQuery } },
    async (request, reply) => {
      const { project_id: projectId, stack, name } = request.params;
      const ifNoneMatch = request.headers['if-none-match'];
      const wait = request.query.wait ?? 0;
      const { condition, etag } = await services.waitConditions.get(
        projectId,
        stack,
        name,
        ifNoneMatch && wait > 0
          ? { unchanged: (etag) => ifNoneMatchHits(ifNoneMatch, etag), waitMs: wait * 1000, abort: abortOnClose(request, reply) }
          : undefined,
      );
      void reply.header('etag', etag).header('cache-control', 'no-cache');
      if (ifNoneMatchHits(ifNoneMatch, etag)) return reply.code(304).send();
      return { wait_condition: condition };
    },
  );
  app.delete('/stacks/:stack/wait_conditions/:name', { schema: { tags: wcTags, params: ConditionParams } }, async (request, reply) => {
    await services.waitConditions.delete(request.params.project_id, request.params.stack, request.params.name);
    return reply.code(204).send();
  });
  app.post(
    '/stacks/:stack/wait_conditions/:name/heartbeat',
    {
      bodyLimit: BODY_LIMITS.small,
      preValidation: async (request) => void (request.body ??= {}),
      schema: { tags: wcTags, params: ConditionParams, body: WaitConditionHeartbeat },
    },
    async (request) => ({
      wait_condition: await services.waitConditions.heartbeat(
        request.params.project_id,
        request.params.stack,
        request.params.name,
        request.body,
      ),
    }),
  );
};
