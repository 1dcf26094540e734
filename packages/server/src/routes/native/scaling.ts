import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  ProjectId,
  ResourceName,
  ScalingGroupCreate,
  ScalingGroupUpdate,
  ScalingMembersChange,
  ScalingPolicyCreate,
  ScalingPolicyRotate,
} from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { BODY_LIMITS } from '../limits.ts';
import { parseJsonBody } from '../../body-parser.ts';
import { isHearthError } from '../../domain/errors.ts';

const StackRef = Type.String({ minLength: 1, maxLength: 255 });
const StackParams = Type.Object({ project_id: ProjectId, stack: StackRef });
const NameParams = Type.Object({ project_id: ProjectId, stack: StackRef, name: ResourceName });
const emptyBody = { preValidation: async (request: { body: unknown }) => void (request.body ??= {}) };

/**
 * /v1/{project}/stacks/{stack}/scaling_groups and .../scaling_policies: groups (bounds, members,
 * actuator) and policies (Heat's adjustments, alarm URLs that rotate and revoke, manual signals).
 */
export const scalingRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  // A manual signal may be plain text (`curl -H 'Content-Type: text/plain' -d 'why'`): kept as a string when it is not JSON.
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (_request, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    try {
      done(null, parseJsonBody(text));
    } catch (error) {
      // Text that is not JSON is the reason itself; JSON that cannot be kept is refused as anywhere else.
      if (isHearthError(error) && error.code === 'ERR_REQUEST_BODY_MALFORMED') done(null, text);
      else done(error as Error, undefined);
    }
  });

  const groups = services.scalingGroups;
  const gTags = ['scaling_groups'];
  app.post(
    '/stacks/:stack/scaling_groups',
    { bodyLimit: BODY_LIMITS.small, schema: { tags: gTags, params: StackParams, body: ScalingGroupCreate } },
    async (request, reply) => reply.code(201).send(await groups.create(request.params.project_id, request.params.stack, request.body)),
  );
  app.get('/stacks/:stack/scaling_groups', { schema: { tags: gTags, params: StackParams } }, async (request) => ({
    scaling_groups: await groups.list(request.params.project_id, request.params.stack),
  }));
  app.get('/stacks/:stack/scaling_groups/:name', { schema: { tags: gTags, params: NameParams } }, async (request) => ({
    scaling_group: await groups.show(request.params.project_id, request.params.stack, request.params.name),
  }));
  app.patch(
    '/stacks/:stack/scaling_groups/:name',
    { bodyLimit: BODY_LIMITS.small, schema: { tags: gTags, params: NameParams, body: ScalingGroupUpdate } },
    async (request) => ({
      scaling_group: await groups.update(request.params.project_id, request.params.stack, request.params.name, request.body),
    }),
  );
  app.delete('/stacks/:stack/scaling_groups/:name', { schema: { tags: gTags, params: NameParams } }, async (request, reply) => {
    await groups.delete(request.params.project_id, request.params.stack, request.params.name);
    return reply.code(204).send();
  });
  app.get('/stacks/:stack/scaling_groups/:name/members', { schema: { tags: gTags, params: NameParams } }, async (request) => {
    const { row } = await groups.find(request.params.project_id, request.params.stack, request.params.name);
    return { members: await groups.members(row.id) };
  });
  app.post(
    '/stacks/:stack/scaling_groups/:name/members',
    { bodyLimit: BODY_LIMITS.deployment, schema: { tags: gTags, params: NameParams, body: ScalingMembersChange } },
    async (request) => ({
      scaling_group: await groups.changeMembers(request.params.project_id, request.params.stack, request.params.name, request.body),
    }),
  );

  const policies = services.scalingPolicies;
  const pTags = ['scaling_policies'];
  app.post(
    '/stacks/:stack/scaling_policies',
    { bodyLimit: BODY_LIMITS.small, schema: { tags: pTags, params: StackParams, body: ScalingPolicyCreate } },
    async (request, reply) =>
      reply.code(201).send({ scaling_policy: await policies.create(request.params.project_id, request.params.stack, request.body) }),
  );
  app.get('/stacks/:stack/scaling_policies', { schema: { tags: pTags, params: StackParams } }, async (request) => ({
    scaling_policies: await policies.list(request.params.project_id, request.params.stack),
  }));
  app.get('/stacks/:stack/scaling_policies/:name', { schema: { tags: pTags, params: NameParams } }, async (request) => ({
    scaling_policy: await policies.show(request.params.project_id, request.params.stack, request.params.name),
  }));
  app.delete('/stacks/:stack/scaling_policies/:name', { schema: { tags: pTags, params: NameParams } }, async (request, reply) => {
    await policies.delete(request.params.project_id, request.params.stack, request.params.name);
    return reply.code(204).send();
  });
  app.post(
    '/stacks/:stack/scaling_policies/:name/rotate',
    { bodyLimit: BODY_LIMITS.small, ...emptyBody, schema: { tags: pTags, params: NameParams, body: ScalingPolicyRotate } },
    async (request) => ({
      scaling_policy: await policies.rotate(request.params.project_id, request.params.stack, request.params.name, request.body),
    }),
  );
  app.post('/stacks/:stack/scaling_policies/:name/revoke', { schema: { tags: pTags, params: NameParams } }, async (request) => ({
    scaling_policy: await policies.revoke(request.params.project_id, request.params.stack, request.params.name),
  }));
  // The operator's manual signal: any alarm payload (Aodh, Alertmanager, plain, empty); answers what it did.
  app.post(
    '/stacks/:stack/scaling_policies/:name/signal',
    { bodyLimit: BODY_LIMITS.signal, schema: { tags: pTags, params: NameParams } },
    async (request) => ({
      result: await policies.signalByName(request.params.project_id, request.params.stack, request.params.name, request.body),
    }),
  );
};
