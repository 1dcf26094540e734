// `hearth`: hearth-server's guest metadata document (`GET /v1/guest/metadata`, Bearer
// `<access_key_id>:<secret>`), with a strong ETag. `collect` makes one conditional request;
// `watch` long-polls (`If-None-Match` + `?wait=N`) and calls back the moment the document changes,
// so the daemon runs its command without waiting for the polling interval.
import { explodeDeployments } from '../explode.ts';
import { sleep } from '../sleep.ts';
import { lookUpSecret, type SecretLookup } from './stored-secret.ts';
import { jsonObject, seconds, setting, unavailable, type Collector, type CollectOutcome, type CollectorContext } from './types.ts';

/** The longest hold hearth-server grants. */
export const MAX_WAIT_SECONDS = 60;

/** Long-poll requests start at least this far apart, and a held request answered sooner without a change was not held. */
const MIN_HOLD_MS = 1000;

/** What the watcher last saw, for `--status`. */
export interface HearthWatchState {
  state: 'idle' | 'waiting' | 'backoff';
  etag: string | undefined;
  lastChangeAt: string | undefined;
  lastError: string | undefined;
}

/** The hearth collector: a Collector that can also watch for changes. */
export interface HearthCollector extends Collector {
  /** Long-polls until `ctx.signal` aborts; `onChange` runs after each new document. */
  watch(ctx: CollectorContext, onChange: () => void): Promise<void>;
  /** The watcher's state. */
  watchState(): Readonly<HearthWatchState>;
}

interface Settings {
  kind: 'settings';
  url: string;
  authorization: string;
  waitSeconds: number;
  timeoutMs: number;
}

/** Why there are no settings: the collector's outcome. */
type NoSettings = Exclude<SecretLookup, { kind: 'secret' }>;

/** The settings of `[hearth]`, the secret read from the config or its secret store (again on every call, so a new one is picked up). */
async function readSettings(ctx: CollectorContext): Promise<Settings | NoSettings> {
  const url = setting(ctx.options, 'hearth', 'metadata_url');
  const accessKeyId = setting(ctx.options, 'hearth', 'access_key_id');
  if (url === undefined) return { kind: 'not-configured', reason: 'No [hearth] metadata_url configured.' };
  if (accessKeyId === undefined) return { kind: 'not-configured', reason: 'No [hearth] access_key_id configured.' };
  const secret = await lookUpSecret(ctx.options, 'hearth', accessKeyId);
  if (secret.kind !== 'secret') return secret;
  const waitSeconds = Math.max(0, Math.min(MAX_WAIT_SECONDS, Math.floor(seconds(ctx.options, 'hearth', 'wait', 55))));
  return {
    kind: 'settings',
    url,
    authorization: `Bearer ${accessKeyId}:${secret.secret}`,
    waitSeconds,
    timeoutMs: seconds(ctx.options, 'hearth', 'timeout', 10) * 1000,
  };
}

/**
 * What a failed reply says, for the log: hearth's coded error as `CODE: message`, else the start of
 * the body with the credential hidden (a proxy or a misconfigured server may echo the request's
 * headers back, Authorization included).
 */
function replyExcerpt(text: string, settings: Settings): string {
  const body = jsonObject(text);
  const error = body.ok ? (body.value.error as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (typeof error?.code === 'string' && typeof error.message === 'string') return `${error.code}: ${error.message}`.slice(0, 300);
  const secret = settings.authorization.slice(settings.authorization.indexOf(':') + 1);
  return (secret === '' ? text : text.replaceAll(secret, '***')).slice(0, 200);
}

function withWait(url: string, waitSeconds: number): string {
  return `${url}${url.includes('?') ? '&' : '?'}wait=${waitSeconds}`;
}

/** A new hearth collector (it remembers the ETag and the document). */
export function createHearthCollector(): HearthCollector {
  let etag: string | undefined;
  let document: Record<string, unknown> | undefined;
  const state: HearthWatchState = { state: 'idle', etag: undefined, lastChangeAt: undefined, lastError: undefined };

  /** One request; true when a new document arrived. Throws on a network error or an unexpected status. */
  const fetchOnce = async (ctx: CollectorContext, settings: Settings, waitSeconds: number): Promise<boolean> => {
    const headers: Record<string, string> = { authorization: settings.authorization, accept: 'application/json' };
    if (etag !== undefined) headers['if-none-match'] = etag;
    const url = waitSeconds > 0 && etag !== undefined ? withWait(settings.url, waitSeconds) : settings.url;
    const response = await ctx.http({
      method: 'GET',
      url,
      headers,
      timeoutMs: settings.timeoutMs + waitSeconds * 1000,
      signal: ctx.signal,
    });
    if (response.status === 304) return false;
    if (response.status !== 200)
      throw new Error(`GET ${settings.url} answered ${response.status}: ${replyExcerpt(response.text(), settings)}`);
    const body = jsonObject(response.text());
    if (!body.ok) throw new Error(body.reason);
    const header = response.headers.etag;
    const next = typeof header === 'string' ? header : undefined;
    const changed = next === undefined || next !== etag;
    etag = next;
    document = body.value;
    state.etag = etag;
    if (changed) state.lastChangeAt = new Date().toISOString();
    return changed;
  };

  return {
    name: 'hearth',
    async collect(ctx): Promise<CollectOutcome> {
      const settings = await readSettings(ctx);
      if (settings.kind !== 'settings') return settings;
      try {
        await fetchOnce(ctx, settings, 0);
      } catch (error) {
        return unavailable((error as Error).message);
      }
      if (document === undefined) return unavailable('no metadata document yet');
      return { kind: 'data', outputs: explodeDeployments(document, ctx.options.deploymentKeys, 'hearth', ctx.log) };
    },
    async watch(ctx, onChange) {
      if ((await readSettings(ctx)).kind === 'not-configured') return;
      let backoffMs = 1000;
      while (!ctx.signal?.aborted) {
        try {
          // Read each time: a secret stored (or a store fixed) after the daemon started is used without a restart.
          const settings = await readSettings(ctx);
          if (settings.kind !== 'settings') throw new Error(settings.reason);
          state.state = 'waiting';
          const askedToHold = settings.waitSeconds > 0 && etag !== undefined;
          const started = Date.now();
          const changed = await fetchOnce(ctx, settings, settings.waitSeconds);
          const heldMs = Date.now() - started;
          state.lastError = undefined;
          backoffMs = 1000;
          if (changed) onChange();
          if (etag === undefined || settings.waitSeconds === 0 || (askedToHold && !changed && heldMs < MIN_HOLD_MS)) {
            // Nothing holds the request: no ETag to hold on, `wait = 0`, or a server (or a proxy in
            // front of it) that answers a held request at once. Poll at the plain interval instead of spinning.
            state.state = 'backoff';
            await sleep(ctx.options.pollingInterval * 1000, ctx.signal);
          } else if (askedToHold && heldMs < MIN_HOLD_MS) {
            // A change right away is normal, but a server that reports one on every request must not make us spin.
            await sleep(MIN_HOLD_MS - heldMs, ctx.signal);
          }
        } catch (error) {
          if (ctx.signal?.aborted) break;
          state.lastError = (error as Error).message;
          state.state = 'backoff';
          ctx.log.warn('hearth long-poll failed; retrying', { error: state.lastError, retry_in_ms: backoffMs });
          await sleep(backoffMs, ctx.signal);
          backoffMs = Math.min(backoffMs * 2, 30_000);
        }
      }
      state.state = 'idle';
    },
    watchState: () => ({ ...state }),
  };
}
