// Keystone v3 password auth for the `heat` collector: the v3 URL (from the URL itself or the
// version document), a token scoped to a project by id, and an endpoint from the catalog.
import type { CollectorContext } from './types.ts';

/** A scoped token and the catalog that came with it. */
export interface KeystoneSession {
  token: string;
  catalog: Array<{ type?: string; endpoints?: Array<{ interface?: string; region?: string; region_id?: string; url?: string }> }>;
}

/** Credentials of a keystone v3 user, by ids (Heat's stack-domain user). */
export interface KeystoneCredentials {
  authUrl: string;
  userId: string;
  password: string;
  projectId: string;
  timeoutMs: number;
}

/** The keystone v3 base URL: the URL itself when it ends in /v3, `/v2.0` swapped for `/v3`, else the version document's v3 link. */
async function v3Url(ctx: CollectorContext, authUrl: string, timeoutMs: number): Promise<string> {
  const trimmed = authUrl.replace(/\/+$/, '');
  if (/\/v3$/.test(trimmed)) return trimmed;
  if (/\/v2\.0$/.test(trimmed)) return trimmed.replace(/\/v2\.0$/, '/v3');
  try {
    const response = await ctx.http({ method: 'GET', url: `${trimmed}/`, timeoutMs, signal: ctx.signal });
    const document = response.json<{ versions?: { values?: Array<{ id?: string; links?: Array<{ rel?: string; href?: string }> }> } }>();
    const v3 = document.versions?.values?.find((version) => version.id?.startsWith('v3'));
    const href = v3?.links?.find((link) => link.rel === 'self')?.href;
    if (href) return href.replace(/\/+$/, '');
  } catch {
    // fall through to the conventional path, as the original does on a discovery error
  }
  return `${trimmed}/v3`;
}

/** Authenticates (a new token on every call, as the original effectively does). Throws with the reason. */
export async function keystoneAuth(ctx: CollectorContext, credentials: KeystoneCredentials): Promise<KeystoneSession> {
  const base = await v3Url(ctx, credentials.authUrl, credentials.timeoutMs);
  const body = {
    auth: {
      identity: { methods: ['password'], password: { user: { id: credentials.userId, password: credentials.password } } },
      scope: { project: { id: credentials.projectId } },
    },
  };
  const response = await ctx.http({
    method: 'POST',
    url: `${base}/auth/tokens`,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(body),
    timeoutMs: credentials.timeoutMs,
    signal: ctx.signal,
  });
  if (response.status !== 201 && response.status !== 200) throw new Error(`keystone refused the credentials (${response.status})`);
  const header = response.headers['x-subject-token'];
  const token = Array.isArray(header) ? header[0] : header;
  if (!token) throw new Error('keystone answered without X-Subject-Token');
  const catalog = response.json<{ token?: { catalog?: KeystoneSession['catalog'] } }>().token?.catalog ?? [];
  return { token, catalog };
}

/** The public endpoint of a service type (in `region` if given), or undefined. */
export function catalogEndpoint(session: KeystoneSession, type: string, region?: string): string | undefined {
  for (const service of session.catalog) {
    if (service.type !== type) continue;
    const endpoint = service.endpoints?.find(
      (candidate) =>
        candidate.interface === 'public' && (region === undefined || candidate.region === region || candidate.region_id === region),
    );
    if (endpoint?.url) return endpoint.url.replace(/\/+$/, '');
  }
  return undefined;
}
