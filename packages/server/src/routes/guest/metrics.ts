import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { MetricPut } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { HearthError } from '../../domain/errors.ts';
import { parsePutMetricData, putMetricDataXml } from '../../domain/metrics-query-form.ts';
import type { MetricSender } from '../../domain/metrics.ts';
import { BODY_LIMITS } from '../limits.ts';
import { ec2Holder } from '../guest-auth.ts';
import { guestPrincipal, onlyAgent } from './auth-hook.ts';

/**
 * POST /v1/guest/metrics with a server's agent credential: samples attributed to that server.
 * Registered by guestRoutes, under its auth hook.
 */
export const guestMetricRoutes: FastifyPluginAsyncTypebox<{ services: Services }> = async (app, { services }) => {
  app.post('/metrics', { bodyLimit: BODY_LIMITS.small * 4, schema: { tags: ['guest', 'metrics'], body: MetricPut } }, async (request) => {
    // Authenticated by guestAuthHook (it refuses the operator token with 403) before the body was read.
    const principal = onlyAgent(guestPrincipal(request));
    return services.metricSamples.put({ projectId: principal.projectId, serverId: principal.serverId }, request.body);
  });
};

/** A form-urlencoded body as the CFN route family parses it: the raw text (SigV4 hashes it) and its parameters. */
export class FormBody {
  constructor(
    readonly raw: string,
    readonly params: Record<string, string>,
  ) {}

  /** Parses `a=1&b=2` (a repeated key keeps its first value). */
  static parse(raw: string): FormBody {
    // No prototype: `toString=` or `__proto__=` in a form is a parameter like any other (and signed).
    const params = Object.create(null) as Record<string, string>;
    for (const [key, value] of new URLSearchParams(raw)) if (!Object.hasOwn(params, key)) params[key] = value;
    return new FormBody(raw, params);
  }
}

/**
 * The server an EC2-signed PutMetricData comes from (v2 or SigV4, parameters in the query or the
 * form body, as boto sends them). Only a server's own credential may send metrics.
 */
async function metricSender(
  services: Services,
  request: FastifyRequest,
  params: Record<string, string>,
  raw: string,
): Promise<MetricSender> {
  const holder = await ec2Holder(services, request, { params, body: raw }, { signedWhenSent: true });
  if (holder.kind !== 'server')
    throw new HearthError('ERR_AUTH_FORBIDDEN', { reason: `metrics are sent with a server's credential, not a ${holder.kind}'s` });
  return { projectId: holder.projectId, serverId: holder.serverId };
}

/**
 * `Action=PutMetricData` on the CFN route (`/v1/`), as cfn-push-stats (boto's CloudWatch client)
 * sends it: signed, samples attributed to the signing server. Replies CloudWatch's XML, or JSON
 * with `ContentType=JSON`.
 */
export async function putMetricData(services: Services, request: FastifyRequest, reply: FastifyReply, query: Record<string, string>) {
  const form = request.body instanceof FormBody ? request.body : null;
  const params = { ...query, ...(form?.params ?? {}) };
  const sender = await metricSender(services, request, params, form?.raw ?? '');
  const { namespace, samples } = parsePutMetricData(params);
  await services.metricSamples.put(sender, { namespace, samples });
  if (params.ContentType?.toUpperCase() === 'JSON') {
    return reply.type('application/json').send({ PutMetricDataResponse: { ResponseMetadata: { RequestId: request.id } } });
  }
  return reply.type('application/xml').send(putMetricDataXml(request.id));
}
