import { Type } from 'typebox';
import { Value } from 'typebox/value';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  clampListLimit,
  DeploymentListQuery,
  ProjectId,
  ServerId,
  SoftwareDeploymentCreate,
  SoftwareDeploymentUpdate,
} from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';
import { BODY_LIMITS } from '../limits.ts';
import { abortOnClose } from '../abort.ts';
import { ifMatchHits } from '../etag.ts';
import { deploymentETag } from '../../domain/deployment-rows.ts';
import { HeatItemParams as ItemParams, IgnoredQueryValue, knownUuid, shownId } from './heat-params.ts';

const Params = Type.Object({ project_id: ProjectId });
/**
 * Heat filters on any `server_id` text and ignores parameters it does not know; `limit` and
 * `marker` (hearth's paging) stay checked. A marker that is not a UUID is answered by knownUuid.
 */
const ListQuery = Type.Object(
  { server_id: Type.Optional(Type.String()), limit: DeploymentListQuery.properties.limit, marker: Type.Optional(Type.String()) },
  { additionalProperties: IgnoredQueryValue },
);
/** Whether a deployment can target the id (a ServerId); for one it cannot, Heat's answer (none) is given without the store. */
const isServerId = (id: string) => Value.Check(ServerId, id);
const WaitQuery = Type.Object({ wait: Type.Optional(Type.Integer({ minimum: 0, maximum: 60 })) }, { additionalProperties: false });

/** /v1/{project}/software_deployments with Heat's shapes, plus metadata, wait and timeline. */
export const deploymentRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  const tags = ['software_deployments'];
  app.post(
    '/software_deployments',
    { bodyLimit: BODY_LIMITS.deployment, schema: { tags, params: Params, body: SoftwareDeploymentCreate } },
    async (request) => ({
      software_deployment: await services.deployments.create(request.params.project_id, request.body),
    }),
  );
  app.get('/software_deployments', { schema: { tags, params: Params, querystring: ListQuery } }, async (request) => {
    const { server_id: serverId, limit, marker } = request.query;
    // An empty server_id filters nothing, as in Heat (`if server_id:`); one no deployment can have matches none.
    if (serverId && !isServerId(serverId)) return { software_deployments: [] };
    const after = marker ? knownUuid(marker, 'ERR_DEPLOYMENT_NOT_FOUND') : undefined;
    return { software_deployments: await services.deployments.list(request.params.project_id, serverId, clampListLimit(limit), after) };
  });
  app.get(
    '/software_deployments/metadata/:server_id',
    { config: { agentAllowed: true }, schema: { tags, params: Type.Object({ project_id: ProjectId, server_id: Type.String() }) } },
    async (request) => {
      const principal = request.principal;
      if (principal?.kind === 'agent' && principal.serverId !== request.params.server_id) {
        throw new HearthError('ERR_SERVER_NOT_FOUND', { id: shownId(request.params.server_id) });
      }
      // As Heat's, the list of deployments that target that id: none for an id no deployment can have.
      if (!isServerId(request.params.server_id)) return { metadata: [] };
      const { derived } = await services.metadata.derivedConfigs(request.params.project_id, request.params.server_id);
      // The server's delete may have committed while its deployments were read: once that DELETE has
      // answered, its agent must not get them (as the guest metadata route checks again too).
      if (principal?.kind === 'agent' && !(await services.servers.byAccessKeyId(principal.accessKeyId))) {
        throw new HearthError('ERR_AUTH_INVALID');
      }
      return { metadata: derived };
    },
  );
  app.get('/software_deployments/:id', { schema: { tags, params: ItemParams, querystring: WaitQuery } }, async (request, reply) => {
    const abort = abortOnClose(request, reply);
    const deployment = await services.deployments.get(
      request.params.project_id,
      knownUuid(request.params.id, 'ERR_DEPLOYMENT_NOT_FOUND'),
      request.query.wait ?? 0,
      abort,
    );
    void reply.header('etag', deploymentETag(deployment));
    return { software_deployment: deployment };
  });
  // With If-Match (the ETag of a GET), the update applies only to the deployment as it was read.
  app.put(
    '/software_deployments/:id',
    {
      bodyLimit: BODY_LIMITS.deployment,
      schema: {
        tags,
        params: ItemParams,
        headers: Type.Object({ 'if-match': Type.Optional(Type.String({ maxLength: 1024 })) }),
        body: SoftwareDeploymentUpdate,
      },
    },
    async (request, reply) => {
      const header = request.headers['if-match'];
      const ifMatch = header === undefined ? undefined : { header, matches: (etag: string) => ifMatchHits(header, etag) };
      const deployment = await services.deployments.update(
        request.params.project_id,
        knownUuid(request.params.id, 'ERR_DEPLOYMENT_NOT_FOUND'),
        request.body,
        ifMatch,
      );
      void reply.header('etag', deploymentETag(deployment));
      return { software_deployment: deployment };
    },
  );
  app.delete('/software_deployments/:id', { schema: { tags, params: ItemParams } }, async (request, reply) => {
    await services.deployments.delete(request.params.project_id, knownUuid(request.params.id, 'ERR_DEPLOYMENT_NOT_FOUND'));
    return reply.code(204).send();
  });
  app.get('/software_deployments/:id/timeline', { schema: { tags, params: ItemParams } }, async (request) => ({
    timeline: await services.deployments.timeline(request.params.project_id, knownUuid(request.params.id, 'ERR_DEPLOYMENT_NOT_FOUND')),
  }));
};
