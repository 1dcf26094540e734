import got, { type Method } from 'got';
import { apiErrorFromReply, connectionErrorFrom, invalidBodyError, redirectError } from './error-mapping.ts';
import type { NormalizedClientOptions } from './options.ts';

/** Which credential header a call carries: operator (X-Auth-Token) or agent (Authorization: Bearer). */
export type AuthKind = 'operator' | 'agent';

/** Query parameters; undefined values are left out. */
export type Query = Record<string, string | number | undefined>;

/** One HTTP call to hearth-server. */
export interface CallSpec {
  method: Method;
  /** Path below the base URL, starting with `/v1/`. */
  path: string;
  auth: AuthKind;
  json?: unknown;
  query?: Query;
  headers?: Record<string, string>;
  /** Extra time allowed on top of the client timeout (long-polls), in ms. Default 0. */
  extraTimeoutMs?: number;
  /** Whether got may retry the call. Default: every method but POST. */
  retry?: boolean;
  /** Ends the call, retries included, when it aborts; the call then rejects with the signal's reason. Default: none. */
  signal?: AbortSignal | undefined;
}

/** Per-call settings some methods accept. */
export interface CallOptions {
  /** Ends the call, retries included, when it aborts; the call then rejects with the signal's reason. Default: none. */
  signal?: AbortSignal | undefined;
}

/** A 2xx or 304 reply, body parsed as JSON (undefined when empty). */
export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

/** Error codes after which a retry may help; ECONNREFUSED is left out so "nothing listens" fails fast. */
const RETRY_ERROR_CODES = ['ETIMEDOUT', 'ECONNRESET', 'EPIPE', 'EAI_AGAIN'];
/** Statuses after which a retry may help. */
const RETRY_STATUS_CODES = [408, 429, 500, 502, 503, 504];

/** How many times got tried a failed call (1 + its retries), when it says. */
function attemptsOf(error: unknown): number | undefined {
  const retryCount = (error as { request?: { retryCount?: unknown } } | undefined)?.request?.retryCount;
  return typeof retryCount === 'number' ? retryCount + 1 : undefined;
}

/**
 * got's `followRedirect` for calls to `baseUrl`: follow a redirect only within its origin (hearth-server
 * sends `/stacks/{name}` to `/stacks/{name}/{id}`). One to another origin, or from https to http, is
 * not followed, since got would resend the X-Auth-Token header there; the call reports it instead.
 */
export function sameOriginRedirects(baseUrl: string): (response: { url: string; headers: { location?: string | undefined } }) => boolean {
  const origin = new URL(baseUrl).origin;
  return (response) => {
    const location = response.headers.location;
    return location !== undefined && URL.canParse(location, response.url) && new URL(location, response.url).origin === origin;
  };
}

/** Sends calls to hearth-server and turns failures into HearthApiError / HearthConnectionError. */
export interface Transport {
  readonly options: NormalizedClientOptions;
  /** Performs one call; resolves on 2xx/304, rejects with a client error otherwise. */
  call(spec: CallSpec): Promise<Reply>;
  /** Full URL of a path (with its query). */
  urlOf(path: string, query?: Query): string;
  /** Headers (auth, user agent, accept) for a call of the given kind. */
  headersFor(auth: AuthKind, extra?: Record<string, string>): Record<string, string>;
}

/** Creates the got-based transport for normalized options. */
export function createTransport(options: NormalizedClientOptions): Transport {
  const urlOf = (path: string, query: Query = {}): string => {
    const url = new URL(options.baseUrl + path);
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url.href;
  };
  const headersFor = (auth: AuthKind, extra: Record<string, string> = {}): Record<string, string> => {
    const headers: Record<string, string> = { 'user-agent': options.userAgent, accept: 'application/json', ...extra };
    if (options.token !== undefined) {
      if (auth === 'operator') headers['x-auth-token'] = options.token;
      else headers.authorization = `Bearer ${options.token}`;
    }
    return headers;
  };

  async function call(spec: CallSpec): Promise<Reply> {
    const url = urlOf(spec.path, spec.query);
    const timeoutMs = options.timeoutMs + (spec.extraTimeoutMs ?? 0);
    const target = { method: spec.method, url, credential: spec.auth };
    let response;
    try {
      response = await got(url, {
        method: spec.method,
        headers: headersFor(spec.auth, spec.headers),
        json: spec.json,
        responseType: 'text',
        throwHttpErrors: false,
        followRedirect: sameOriginRedirects(options.baseUrl),
        timeout: { request: timeoutMs },
        retry: {
          limit: (spec.retry ?? spec.method !== 'POST') ? options.retry : 0,
          methods: [spec.method],
          statusCodes: RETRY_STATUS_CODES,
          errorCodes: RETRY_ERROR_CODES,
        },
        ...(spec.signal === undefined ? {} : { signal: spec.signal }),
      });
    } catch (error) {
      if (spec.signal?.aborted === true) throw spec.signal.reason;
      throw connectionErrorFrom(error, { ...target, baseUrl: options.baseUrl, timeoutMs, attempts: attemptsOf(error) });
    }
    const status = response.statusCode;
    const bodyText = response.body;
    if (status >= 400) throw apiErrorFromReply({ ...target, status, bodyText });
    if (status >= 300 && status !== 304) throw redirectError({ ...target, status, location: response.headers.location });
    let body: unknown;
    if (bodyText.trim() !== '') {
      try {
        body = JSON.parse(bodyText);
      } catch {
        throw invalidBodyError({ ...target, status, bodyText });
      }
    }
    return { status, headers: response.headers, body };
  }

  return { options, call, urlOf, headersFor };
}
