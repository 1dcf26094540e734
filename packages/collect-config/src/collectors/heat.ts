// `heat`: keystone v3 password auth, then the orchestration endpoint's
// `stacks/<stack_id>/resources/<resource>/metadata` with the token. Exploded with the global key.
import { explodeDeployments } from '../explode.ts';
import { catalogEndpoint, keystoneAuth } from './keystone.ts';
import {
  jsonObject,
  notConfigured,
  seconds,
  setting,
  unavailable,
  type Collector,
  type CollectOutcome,
  type CollectorContext,
} from './types.ts';

const REQUIRED = ['auth_url', 'user_id', 'password', 'project_id', 'stack_id', 'resource_name'] as const;

/** `name/id` for a stack id; a bare name is looked up (`GET stacks/<name>` answers 302 to the full path, or the stack). */
async function fullStackId(ctx: CollectorContext, endpoint: string, stackId: string, token: string, timeoutMs: number): Promise<string> {
  if (stackId.includes('/')) return stackId;
  const response = await ctx.http({
    method: 'GET',
    url: `${endpoint}/stacks/${encodeURIComponent(stackId)}`,
    headers: { 'x-auth-token': token },
    timeoutMs,
    signal: ctx.signal,
  });
  const location = response.headers.location;
  if (response.status >= 300 && response.status < 400 && typeof location === 'string') {
    const match = /\/stacks\/([^/]+\/[^/?#]+)/.exec(location);
    if (match) return decodeURIComponent(match[1]!);
  }
  if (response.status === 200) {
    const stack = response.json<{ stack?: { id?: string; stack_name?: string } }>().stack;
    if (stack?.id) return `${stack.stack_name ?? stackId}/${stack.id}`;
  }
  throw new Error(`stack ${stackId} not found (${response.status})`);
}

/** The `heat` collector. */
export const heatCollector: Collector = {
  name: 'heat',
  async collect(ctx): Promise<CollectOutcome> {
    const missing = REQUIRED.filter((name) => setting(ctx.options, 'heat', name) === undefined);
    if (missing.length > 0) return notConfigured(`No ${missing.join(', ')} configured.`);
    const value = (name: (typeof REQUIRED)[number]): string => setting(ctx.options, 'heat', name)!;
    const timeoutMs = seconds(ctx.options, 'heat', 'timeout', 10) * 1000;
    try {
      const session = await keystoneAuth(ctx, {
        authUrl: value('auth_url'),
        userId: value('user_id'),
        password: value('password'),
        projectId: value('project_id'),
        timeoutMs,
      });
      const endpoint = catalogEndpoint(session, 'orchestration', setting(ctx.options, 'heat', 'region_name'));
      if (endpoint === undefined) return unavailable('no public orchestration endpoint in the keystone catalog');
      const stackId = await fullStackId(ctx, endpoint, value('stack_id'), session.token, timeoutMs);
      const url = `${endpoint}/stacks/${stackId}/resources/${encodeURIComponent(value('resource_name'))}/metadata`;
      const response = await ctx.http({
        method: 'GET',
        url,
        headers: { 'x-auth-token': session.token, accept: 'application/json' },
        timeoutMs,
        signal: ctx.signal,
      });
      if (response.status !== 200) return unavailable(`resource metadata answered ${response.status}`);
      const body = jsonObject(response.text());
      if (!body.ok) return unavailable(body.reason);
      const metadata = body.value.metadata;
      if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata))
        return unavailable('the reply has no "metadata" object');
      return {
        kind: 'data',
        outputs: explodeDeployments(metadata as Record<string, unknown>, ctx.options.deploymentKeys, 'heat', ctx.log),
      };
    } catch (error) {
      return unavailable((error as Error).message);
    }
  },
};
