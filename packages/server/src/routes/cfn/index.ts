import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { heatTime, stackArn } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';
import { arnFromPath, parseArn } from '@hearth/protocol/signing';
import { revokedWhenGone, type Holder } from '../../auth/guest-credentials.ts';
import { BODY_LIMITS } from '../limits.ts';
import { codedRequestError, retryAfterSeconds } from '../../app-errors.ts';
import { assertNamesHolder, decodedPath, ec2Holder, queryParams, revokedAccessKey } from '../guest-auth.ts';
import { assertCurrentAction, resourceMetadata, resourceSignal } from '../resource-actions.ts';
import { FormBody, putMetricData } from '../guest/metrics.ts';
import { describeStackResourceJson, describeStackResourceXml, escapeXml, type StackResourceDetail } from './xml.ts';
import { cfnErrorReply, type CfnFormat as Format } from './errors.ts';

/**
 * The parameters of a CFN query request. A form POST carries them in its body (the query API as
 * boto and botocore send it): the query string's and the body's are read together, the body's
 * winning a name both carry, and the signature is checked over all of them, so a query-string
 * parameter can neither replace a signed body parameter nor add one that was not signed (Heat reads
 * both too). Any other request has only its query string.
 */
function actionParams(request: FastifyRequest): Record<string, string> {
  const query = queryParams(request);
  return request.body instanceof FormBody ? { ...query, ...request.body.params } : query;
}

/** CFN replies are XML unless the request says `ContentType=JSON` (heat-api-cfn's rule). */
function formatOf(request: FastifyRequest): Format {
  return actionParams(request).ContentType?.toUpperCase() === 'JSON' ? 'json' : 'xml';
}

function send(reply: FastifyReply, format: Format, status: number, body: string): FastifyReply {
  return reply
    .code(status)
    .type(format === 'json' ? 'application/json' : 'application/xml')
    .send(body);
}

/** The ARN a CFN signal path names, parsed, or a 400 that says why not. */
function pathArn(request: FastifyRequest): NonNullable<ReturnType<typeof parseArn>> {
  const text = arnFromPath(request.url.split('?', 1)[0] ?? '') ?? arnFromPath(decodedPath(request));
  const arn = text === null ? null : parseArn(text);
  if (arn === null || arn.resourceName === null) {
    throw new HearthError('ERR_REQUEST_INVALID', {
      reason: 'the path must end in a resource ARN: arn:openstack:heat::{project}:stacks/{name}/{id}/resources/{resource}',
    });
  }
  return arn;
}

/** The DescribeStackResource detail of the resource a credential holds. */
async function describe(services: Services, holder: Holder, request: FastifyRequest): Promise<StackResourceDetail> {
  const metadata = await resourceMetadata(services, holder, request.log, revokedAccessKey);
  const types = {
    server: 'OS::Nova::Server',
    deployment: 'OS::Heat::SoftwareDeployment',
    wait_condition: 'OS::Heat::WaitConditionHandle',
    scaling_policy: 'OS::Heat::ScalingPolicy',
  };
  const physical =
    holder.kind === 'server'
      ? holder.serverId
      : holder.kind === 'deployment'
        ? holder.deploymentId
        : holder.kind === 'scaling_policy'
          ? holder.policyId
          : holder.waitConditionId;
  return {
    StackId: stackArn(holder.projectId, holder.stackName, holder.stackId),
    StackName: holder.stackName,
    LogicalResourceId: holder.resourceName,
    PhysicalResourceId: physical,
    ResourceType: types[holder.kind],
    ResourceStatus: 'CREATE_COMPLETE',
    ResourceStatusReason: 'state changed',
    Description: '',
    LastUpdatedTimestamp: heatTime(),
    Metadata: metadata,
  };
}

/**
 * The CFN-compatible API as heat-api-cfn serves it to guests: pre-signed wait-condition and
 * signal URLs, and DescribeStackResource for metadata polling. Errors are CFN error bodies. Unlike
 * Heat, a bad body is a 400 with a reason, never a silent 200 or a 500.
 */
export const cfnRoutes: FastifyPluginAsync<{ services: Services }> = async (app, { services }) => {
  // Every failure gets the coded error it gets elsewhere (codedRequestError), in CFN's shape and the reply format the request asks for.
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const coded = codedRequestError(error, request);
    const retryAfter = retryAfterSeconds(coded);
    if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
    const { contentType, body } = cfnErrorReply(coded, formatOf(request));
    return reply.code(coded.statusCode).type(contentType).send(body);
  });

  // A handle URL: PUT the CFN handle body; the answer names the resource (heat-api-cfn's reply).
  app.put('/waitcondition/*', { bodyLimit: BODY_LIMITS.signal }, async (request, reply) => {
    const arn = pathArn(request);
    const holder = await ec2Holder(services, request);
    assertNamesHolder(holder, arn);
    if (holder.kind !== 'wait_condition')
      throw new HearthError('ERR_RESOURCE_SIGNAL_UNSUPPORTED', { name: holder.resourceName, kind: holder.kind });
    if (request.body === undefined)
      throw new HearthError('ERR_SIGNAL_INVALID', {
        reason: 'the body is empty (a CFN wait condition takes {Status, Reason, UniqueId, Data})',
      });
    await resourceSignal(services, holder, request.body, 'cfn-wait').catch(revokedWhenGone(holder, revokedAccessKey));
    const format = formatOf(request);
    const metadata = await services.waitConditions.handleMetadata(holder.waitConditionId);
    return send(
      reply,
      format,
      200,
      format === 'json'
        ? JSON.stringify({ resource: holder.resourceName, metadata })
        : `<resource>${escapeXml(holder.resourceName)}</resource>`,
    );
  });

  // A signal URL (deployments' CFN_SIGNAL, handles' `signal` URL): 200 with an empty body once committed.
  app.post('/signal/*', { bodyLimit: BODY_LIMITS.signal }, async (request, reply) => {
    const arn = pathArn(request);
    const holder = await ec2Holder(services, request);
    assertNamesHolder(holder, arn);
    const action = await assertCurrentAction(services, holder, queryParams(request).Timestamp);
    await resourceSignal(services, holder, request.body, 'heat', action, revokedAccessKey).catch(revokedWhenGone(holder, revokedAccessKey));
    return reply.code(200).send();
  });

  const action = async (request: FastifyRequest, reply: FastifyReply) => {
    const params = actionParams(request);
    if (params.Action === 'PutMetricData') return putMetricData(services, request, reply, queryParams(request));
    if (params.Action !== 'DescribeStackResource') {
      const asked = params.Action === undefined ? 'the request names no Action' : `Action '${params.Action}' is not served here`;
      throw new HearthError('ERR_REQUEST_INVALID', { reason: `${asked}; guests use DescribeStackResource and PutMetricData` });
    }
    const stackName = params.StackName;
    const resourceName = params.LogicalResourceId;
    if (!stackName || !resourceName)
      throw new HearthError('ERR_REQUEST_INVALID', { reason: 'DescribeStackResource needs StackName and LogicalResourceId' });
    // A form POST is signed over its parameters (query and body together) and, for SigV4, its body.
    const holder = await ec2Holder(services, request, {
      params,
      body: request.body instanceof FormBody ? request.body.raw : undefined,
    });
    const byArn = parseArn(stackName);
    const target = byArn ? { ...byArn, resourceName } : { project: holder.projectId, stackName, stackId: holder.stackId, resourceName };
    assertNamesHolder(holder, target);
    const detail = await describe(services, holder, request);
    const format = formatOf(request);
    return send(reply, format, 200, format === 'json' ? describeStackResourceJson(detail) : describeStackResourceXml(detail));
  };
  app.get('/', action);
  // Query API clients (boto's cfn-push-stats, botocore) post a form: read as one on this route only,
  // and served as the GET is (see actionParams for which parameters count).
  await app.register(async (forms) => {
    forms.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
      done(null, FormBody.parse(body.toString())),
    );
    forms.post('/', { bodyLimit: BODY_LIMITS.small * 4 }, action);
  });
};
