// One delivery attempt of one outbox entry over its transport, classified: delivered (2xx),
// retry (no response, 408, 429, 5xx) or rejected (any other status: sending it again cannot help).
import { httpRequest, HttpRequestError, type HttpResponse } from '@hearth/agent-kit';
import { isRetryableStatus } from './backoff.ts';
import type { OutboxEntry } from './outbox.ts';
import type { SignalRoute } from './route.ts';

/** What one attempt came to. */
export type DeliveryOutcome =
  | { result: 'delivered'; status: number; detail: string }
  | { result: 'retry'; status: number | null; reason: string; retryAfterMs?: number }
  | { result: 'rejected'; status: number; reason: string };

/** How attempts are made. */
export interface DeliveryOptions {
  /** Limit of one HTTP request, connect to last byte, in ms. Default 30000. */
  timeoutMs?: number;
  /** The HTTP client (tests may wrap it). Default agent-kit's httpRequest. */
  http?: typeof httpRequest;
}

const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

/** The server's reason in an error reply: hearth's/Heat's `error.message`, keystone's, a CFN `<Message>`, or the text. */
export function serverReason(response: HttpResponse): string {
  const text = response.text().trim();
  try {
    const body = JSON.parse(text) as { error?: { message?: unknown; explanation?: unknown }; explanation?: unknown; message?: unknown };
    for (const candidate of [body.error?.message, body.explanation, body.message, body.error?.explanation])
      if (typeof candidate === 'string' && candidate !== '') return candidate;
  } catch {
    // Not JSON: an XML error body or plain text.
  }
  const xml = /<Message>([^<]*)<\/Message>/.exec(text);
  if (xml) return xml[1]!;
  const plain = text.replace(/\s+/g, ' ');
  return plain === '' ? `HTTP ${response.status} with an empty body` : plain.slice(0, 500);
}

/** Retry-After in ms (seconds or an HTTP date), if the response has one. */
function retryAfterMs(response: HttpResponse): number | undefined {
  const value = response.headers['retry-after'];
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Classifies a response: 2xx delivered, 408/429/5xx retry, other statuses rejected. */
function classify(response: HttpResponse, what: string): DeliveryOutcome {
  if (response.status >= 200 && response.status < 300)
    return { result: 'delivered', status: response.status, detail: response.text().slice(0, 500) };
  const reason = `${what} answered ${response.status}: ${serverReason(response)}`;
  if (isRetryableStatus(response.status)) {
    const after = retryAfterMs(response);
    return { result: 'retry', status: response.status, reason, ...(after === undefined ? {} : { retryAfterMs: after }) };
  }
  return { result: 'rejected', status: response.status, reason };
}

/** The keystone v3 token URL for deploy_auth_url (`…/v3`, `…/v2.0` or a bare keystone root). */
export function keystoneTokensUrl(authUrl: string): string {
  const base = authUrl.replace(/\/+$/, '');
  if (/\/v3$/.test(base)) return `${base}/auth/tokens`;
  if (/\/v2\.0$/.test(base)) return `${base.slice(0, -'/v2.0'.length)}/v3/auth/tokens`;
  return `${base}/v3/auth/tokens`;
}

/** The public orchestration endpoint in a keystone v3 catalog (in the region, when one is named). */
function orchestrationEndpoint(token: unknown, region: string | null): string | undefined {
  const catalog = (token as { token?: { catalog?: unknown } } | null)?.token?.catalog;
  if (!Array.isArray(catalog)) return undefined;
  for (const service of catalog as Array<{ type?: unknown; endpoints?: unknown }>) {
    if (service.type !== 'orchestration' || !Array.isArray(service.endpoints)) continue;
    for (const endpoint of service.endpoints as Array<{ interface?: unknown; region?: unknown; region_id?: unknown; url?: unknown }>) {
      if (endpoint.interface !== 'public' || typeof endpoint.url !== 'string') continue;
      if (region !== null && endpoint.region !== region && endpoint.region_id !== region) continue;
      return endpoint.url.replace(/\/+$/, '');
    }
  }
  return undefined;
}

type HeatRoute = Extract<SignalRoute, { transport: 'HEAT_SIGNAL' }>;

/** HEAT_SIGNAL: keystone v3 password auth, then the resource signal with the token. */
async function deliverHeat(route: HeatRoute, body: string, http: typeof httpRequest, timeoutMs: number): Promise<DeliveryOutcome> {
  const user =
    route.userId !== null
      ? { id: route.userId, password: route.password }
      : { name: route.username, domain: { id: 'default' }, password: route.password };
  const auth = { auth: { identity: { methods: ['password'], password: { user } }, scope: { project: { id: route.projectId } } } };
  const tokensUrl = keystoneTokensUrl(route.authUrl);
  const issued = await http({ method: 'POST', url: tokensUrl, headers: JSON_HEADERS, body: JSON.stringify(auth), timeoutMs });
  if (issued.status !== 201 && issued.status !== 200) return classify(issued, `keystone (POST ${tokensUrl})`);
  const token = issued.headers['x-subject-token'];
  if (typeof token !== 'string' || token === '')
    return {
      result: 'retry',
      status: issued.status,
      reason: `keystone (POST ${tokensUrl}) answered ${issued.status} without an X-Subject-Token`,
    };
  let endpoint: string | undefined;
  try {
    endpoint = orchestrationEndpoint(issued.json(), route.regionName);
  } catch {
    endpoint = undefined;
  }
  if (endpoint === undefined) {
    const region = route.regionName === null ? '' : ` in region ${route.regionName}`;
    return { result: 'rejected', status: issued.status, reason: `the keystone catalog has no public orchestration endpoint${region}` };
  }
  const stack = route.stackId.split('/').map(encodeURIComponent).join('/');
  const url = `${endpoint}/stacks/${stack}/resources/${encodeURIComponent(route.resourceName)}/signal`;
  const response = await http({ method: 'POST', url, headers: { ...JSON_HEADERS, 'x-auth-token': token }, body, timeoutMs });
  return classify(response, `heat (POST ${url})`);
}

/** Makes one attempt to deliver an entry. Never throws for network trouble: that is a `retry` outcome. */
export async function deliverEntry(entry: OutboxEntry, options: DeliveryOptions = {}): Promise<DeliveryOutcome> {
  const http = options.http ?? httpRequest;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const route = entry.route;
  try {
    if (route.transport === 'HEAT_SIGNAL') return await deliverHeat(route, entry.body, http, timeoutMs);
    const headers: Record<string, string> = { ...JSON_HEADERS };
    if (route.transport === 'HEARTH_SIGNAL') headers['idempotency-key'] = entry.id;
    const response = await http({ method: route.method, url: route.url, headers, body: entry.body, timeoutMs });
    return classify(response, route.transport === 'TEMP_URL_SIGNAL' ? 'the temp URL' : 'the signal URL');
  } catch (error) {
    if (error instanceof HttpRequestError) {
      if (error.code === 'ERR_HTTP_INVALID_URL') return { result: 'rejected', status: 0, reason: error.message };
      return { result: 'retry', status: null, reason: error.message };
    }
    throw error;
  }
}
