import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';

/**
 * Operator routes under /v1/{project_id}: the caller must be the operator and the project must
 * exist. Agents are refused here, except where a route allows them (`config.agentAllowed`).
 */
export function installOperatorAuth(app: FastifyInstance, services: Services): void {
  app.addHook('preHandler', async (request: FastifyRequest) => {
    const principal = await services.auth.principal(request);
    request.principal = principal;
    const projectId = (request.params as { project_id: string }).project_id;
    if (principal.kind === 'agent') {
      const agentAllowed = (request.routeOptions.config as { agentAllowed?: boolean } | undefined)?.agentAllowed === true;
      if (!agentAllowed)
        throw new HearthError('ERR_AUTH_FORBIDDEN', { reason: "an agent credential reaches only its own server's metadata and signals" });
      if (principal.projectId !== projectId)
        throw new HearthError('ERR_AUTH_FORBIDDEN', { reason: 'the credential belongs to another project' });
    }
    await services.projects.assertExists(projectId);
  });
}
