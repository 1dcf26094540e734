import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { ProjectId, ResourceName } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';
import { revokedWhenGone, type Holder } from '../../auth/guest-credentials.ts';
import { BODY_LIMITS } from '../limits.ts';
import { assertNamesHolder, tokenHolder } from '../guest-auth.ts';
import { resourceMetadata, resourceSignal } from '../resource-actions.ts';

const StackParams = Type.Object({ project_id: ProjectId, stack: Type.String({ minLength: 1, maxLength: 255 }) });
const ResourceParams = Type.Object({
  project_id: ProjectId,
  stack: Type.String({ minLength: 1, maxLength: 255 }),
  stack_id: Type.String({ minLength: 1, maxLength: 64 }),
  resource: ResourceName,
});

function revokedToken(): HearthError {
  return new HearthError('ERR_AUTH_INVALID');
}

/** The caller of a Heat-compatible route: a guest's keystone token (scoped to one resource) or the operator. */
async function caller(services: Services, request: FastifyRequest, projectId: string): Promise<Holder | 'operator'> {
  const holder = await tokenHolder(services, request);
  if (holder) {
    if (holder.projectId !== projectId) throw new HearthError('ERR_AUTH_FORBIDDEN', { reason: 'the token belongs to another project' });
    return holder;
  }
  const principal = await services.auth.principal(request);
  if (principal.kind !== 'operator') {
    throw new HearthError('ERR_AUTH_FORBIDDEN', {
      reason: 'Heat-compatible resource calls take a keystone token (POST /v3/auth/tokens) or the operator token',
    });
  }
  await services.projects.assertExists(projectId);
  return 'operator';
}

/**
 * Heat's native resource endpoints that guests call (reference/server.md §2.1–2.2), with
 * `X-Auth-Token` from hearth's keystone shim. A guest token reaches only its own resource.
 */
export const heatCompatRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const tags = ['heat-compatible'];

  /**
   * The holder the request names: the guest's own (checked), or for the operator the named resource;
   * `guest` says which (a guest's token is revoked with its resource, the operator's never).
   */
  async function target(
    request: FastifyRequest<{ Params: { project_id: string; stack: string; stack_id: string; resource: string } }>,
  ): Promise<{ holder: Holder; guest: boolean }> {
    const { project_id: projectId, stack, stack_id: stackId, resource } = request.params;
    const who = await caller(services, request, projectId);
    if (who !== 'operator') {
      assertNamesHolder(who, { project: projectId, stackName: stack, stackId, resourceName: resource });
      return { holder: who, guest: true };
    }
    const found = await services.guestCredentials.inStack(projectId, stack, stackId, resource);
    if (!found) throw new HearthError('ERR_RESOURCE_NOT_FOUND', { name: resource, stack: `${stack}/${stackId}` });
    return { holder: found, guest: false };
  }

  // heatclient resolves a bare stack name with this redirect to /stacks/{name}/{id}.
  app.get('/stacks/:stack', { schema: { tags, params: StackParams } }, async (request, reply) => {
    const { project_id: projectId, stack } = request.params;
    const who = await caller(services, request, projectId);
    const row = await services.stacks.resolve(projectId, stack);
    if (who !== 'operator' && who.stackId !== row.id) throw new HearthError('ERR_STACK_NOT_FOUND', { stack });
    return reply.redirect(`/v1/${projectId}/stacks/${row.name}/${row.id}`, 302);
  });

  app.get('/stacks/:stack/:stack_id/resources/:resource/metadata', { schema: { tags, params: ResourceParams } }, async (request) => {
    const { holder, guest } = await target(request);
    // A guest's token is checked again before the answer: its resource may be deleted meanwhile.
    return { metadata: await resourceMetadata(services, holder, request.log, guest ? revokedToken : undefined) };
  });

  app.post(
    '/stacks/:stack/:stack_id/resources/:resource/signal',
    { bodyLimit: BODY_LIMITS.signal, schema: { tags, params: ResourceParams } },
    async (request, reply) => {
      const { holder, guest } = await target(request);
      // A revoked token is keystone's 401, as tokenHolder answers it.
      const signalled = resourceSignal(services, holder, request.body, 'heat', undefined, guest ? revokedToken : undefined);
      await (guest ? signalled.catch(revokedWhenGone(holder, revokedToken)) : signalled);
      return reply.code(200).send();
    },
  );
};
