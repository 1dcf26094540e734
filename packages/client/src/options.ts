/** Options of createClient. */
export interface ClientOptions {
  /** Base URL of hearth-server, e.g. `http://127.0.0.1:8000` (a path prefix is kept). Required. */
  url: string;
  /** Admin token (sent as X-Auth-Token to the native API) or agent credential token (sent as Bearer to the guest API). Default: none. */
  token?: string | undefined;
  /** Project id used in native API paths. Default `default`. */
  project?: string | undefined;
  /** Time a single call may take, in ms; long-polls add their wait on top. Default 30000. */
  timeoutMs?: number | undefined;
  /** Retries of idempotent calls after 408/429/500/502/503/504 or a reset connection (never after a refused one). Default 2. */
  retry?: number | undefined;
  /** User-Agent header. Default `hearth-client/0.1.0`. */
  userAgent?: string | undefined;
}

/** ClientOptions with every default applied. */
export interface NormalizedClientOptions {
  baseUrl: string;
  token: string | undefined;
  project: string;
  timeoutMs: number;
  retry: number;
  userAgent: string;
}

/** Default per-call timeout in ms. */
export const DEFAULT_TIMEOUT_MS = 30_000;
/** Default retry count for idempotent calls. */
export const DEFAULT_RETRY = 2;
/** Default project id. */
export const DEFAULT_PROJECT = 'default';

/** Names of the characters a token most often picks up by mistake. */
const CHARACTER_NAMES: Record<string, string> = { '\n': 'a line feed', '\r': 'a carriage return', '\t': 'a tab', ' ': 'a space' };

/**
 * Why `token` cannot be sent as a credential header, or undefined when it can: a token is printable
 * ASCII without spaces. The message names the character and its position, never the token itself.
 */
export function tokenProblem(token: string): string | undefined {
  const index = token.search(/[^\x21-\x7e]/);
  if (index === -1) return undefined;
  const char = token[index] ?? '';
  const codePoint = char.codePointAt(0) ?? 0;
  const name = CHARACTER_NAMES[char] ?? `the character U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
  return `has ${name} at character ${index + 1}; a token is printable ASCII without spaces`;
}

/** Applies defaults and checks ClientOptions; throws a TypeError naming the bad option and value. */
export function normalizeClientOptions(options: ClientOptions): NormalizedClientOptions {
  let parsed: URL;
  try {
    parsed = new URL(options.url);
  } catch {
    throw new TypeError(`hearth client: url ${JSON.stringify(options.url)} is not a URL; pass e.g. http://127.0.0.1:8000`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new TypeError(`hearth client: url ${JSON.stringify(options.url)} must start with http:// or https://`);
  }
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new TypeError(`hearth client: timeoutMs ${String(timeoutMs)} must be a positive number of milliseconds`);
  }
  const retry = options.retry ?? DEFAULT_RETRY;
  if (!Number.isInteger(retry) || retry < 0) {
    throw new TypeError(`hearth client: retry ${String(retry)} must be a whole number >= 0`);
  }
  const problem = options.token === undefined ? undefined : tokenProblem(options.token);
  if (problem !== undefined) throw new TypeError(`hearth client: token ${problem}`);
  return {
    baseUrl: parsed.href.replace(/\/+$/, ''),
    token: options.token === '' ? undefined : options.token,
    project: options.project ?? DEFAULT_PROJECT,
    timeoutMs,
    retry,
    userAgent: options.userAgent ?? 'hearth-client/0.1.0',
  };
}
