// `hearth`: hearth-server's guest metadata document (`GET /v1/guest/metadata`, Bearer
// `<access_key_id>:<secret>`), with a strong ETag. `collect` makes one conditional request;
// `watch` long-polls (`If-None-Match` + `?wait=N`) and calls back the moment the document changes,
// so the daemon runs its command without waiting for the polling interval.
import { markServerAnswered, originOf, redactText } from '@hearth/agent-kit';
import { explodeDeployments } from '../explode.ts';
import { sleep } from '../sleep.ts';
import { lookUpSecret, type SecretLookup } from './stored-secret.ts';
import { jsonObject, seconds, setting, unavailable, type Collector, type CollectOutcome, type CollectorContext } from './types.ts';

/** The longest hold hearth-server grants. */
export const MAX_WAIT_SECONDS = 60;

/** Long-poll requests start at least this far apart, and a held request answered sooner without a change was not held. */
const MIN_HOLD_MS = 1000;

/** Held requests answered at once this many times in a row mean nothing holds them (a proxy): poll at the interval. */
const UNHELD_BEFORE_INTERVAL = 3;

/** Up to this much is added to the reconnect after an answer that ends a wait early. */
const RECONNECT_JITTER_MS = 2000;

/** The error backoff starts here and doubles up to MAX_BACKOFF_MS. */
const MIN_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;

/** A `Retry-After` longer than this (a proxy's, say) is waited only this long: changes must not wait an hour. */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

/** A 429: the server asks this agent to come back later (hearth-server: too many waiting long-polls of one credential). */
class RateLimitedError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number | undefined,
  ) {
    super(message);
  }
}

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
 * the body, with the credential hidden either way (a proxy or a misconfigured server may echo the
 * request's headers back, Authorization included, in its body or its error message).
 */
function replyExcerpt(text: string, settings: Settings): string {
  const secret = settings.authorization.slice(settings.authorization.indexOf(':') + 1);
  const hide = (excerpt: string): string => (secret === '' ? excerpt : excerpt.replaceAll(secret, '***'));
  const body = jsonObject(text);
  const error = body.ok ? (body.value.error as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (typeof error?.code === 'string' && typeof error.message === 'string') return hide(`${error.code}: ${error.message}`).slice(0, 300);
  return hide(text).slice(0, 200);
}

function withWait(url: string, waitSeconds: number): string {
  return `${url}${url.includes('?') ? '&' : '?'}wait=${waitSeconds}`;
}

/** `Retry-After` in ms when it is a number of seconds (the form hearth-server sends), else undefined. */
function retryAfterMs(header: string | string[] | undefined): number | undefined {
  return typeof header === 'string' && /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : undefined;
}

/** What one request brought: a new document or not, and the `Retry-After` the server asked for. */
interface FetchResult {
  changed: boolean;
  retryAfterMs: number | undefined;
}

/** A new hearth collector (it remembers the ETag and the document); `random` (default Math.random) jitters its retries. */
export function createHearthCollector(random: () => number = Math.random): HearthCollector {
  let etag: string | undefined;
  let document: Record<string, unknown> | undefined;
  const state: HearthWatchState = { state: 'idle', etag: undefined, lastChangeAt: undefined, lastError: undefined };

  /** One request: whether a new document arrived. Throws on a network error or an unexpected status. */
  const fetchOnce = async (ctx: CollectorContext, settings: Settings, waitSeconds: number): Promise<FetchResult> => {
    const headers: Record<string, string> = { authorization: settings.authorization, accept: 'application/json' };
    if (etag !== undefined) headers['if-none-match'] = etag;
    const url = waitSeconds > 0 && etag !== undefined ? withWait(settings.url, waitSeconds) : settings.url;
    const response = await ctx.http({
      method: 'GET',
      url,
      headers,
      // The server may hold the request for the wait before it answers; a body that stalls is still caught within `timeout`.
      timeoutMs: settings.timeoutMs,
      holdMs: waitSeconds * 1000,
      signal: ctx.signal,
    });
    const retryAfter = retryAfterMs(response.headers['retry-after']);
    // The server is up: signals heat-config-notify queued for it while it was not go out now, not after their
    // backoff. Not on a 304 with Retry-After, which is a server ending its long-polls as it stops.
    if (response.status === 200 || (response.status === 304 && retryAfter === undefined))
      markServerAnswered(ctx.options.paths.outboxDir, originOf(settings.url), Date.now());
    if (response.status === 304) return { changed: false, retryAfterMs: retryAfter };
    if (response.status === 429)
      throw new RateLimitedError(`GET ${settings.url} answered 429: ${replyExcerpt(response.text(), settings)}`, retryAfter);
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
    return { changed, retryAfterMs: retryAfter };
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
      let backoffMs = MIN_BACKOFF_MS;
      let unheldInARow = 0;
      // Logged once per run of 429s, not on every retry: the server asks for patience, nothing is broken.
      let rateLimited = false;
      while (!ctx.signal?.aborted) {
        try {
          // Read each time: a secret stored (or a store fixed) after the daemon started is used without a restart.
          const settings = await readSettings(ctx);
          if (settings.kind !== 'settings') throw new Error(settings.reason);
          state.state = 'waiting';
          const askedToHold = settings.waitSeconds > 0 && etag !== undefined;
          // monotonic: a wall clock stepped back during the hold made heldMs negative and the sleep below years long
          const started = performance.now();
          const { changed, retryAfterMs } = await fetchOnce(ctx, settings, settings.waitSeconds);
          const heldMs = performance.now() - started;
          state.lastError = undefined;
          backoffMs = MIN_BACKOFF_MS;
          if (rateLimited) ctx.log.info('hearth long-poll accepted again after a rate limit');
          rateLimited = false;
          if (changed) onChange();
          const unheld = askedToHold && !changed && heldMs < MIN_HOLD_MS;
          unheldInARow = unheld ? unheldInARow + 1 : 0;
          const intervalMs = ctx.options.pollingInterval * 1000;
          if (etag === undefined || settings.waitSeconds === 0 || unheldInARow >= UNHELD_BEFORE_INTERVAL) {
            // Nothing holds the request: no ETag to hold on, `wait = 0`, or a server (or a proxy in
            // front of it) that answers held requests at once, time after time. Poll at the plain interval instead of spinning.
            state.state = 'backoff';
            await sleep(intervalMs, ctx.signal);
          } else if (unheld || retryAfterMs !== undefined) {
            // The wait ended early: hearth-server ends its long-polls when it stops (a 304 with
            // `Retry-After`), and the server is soon back (or another replica takes over); a proxy
            // that never holds shows itself by doing it again. Ask again within seconds, jittered so
            // that a fleet cut off together does not come back in lockstep.
            state.state = 'backoff';
            const baseMs = Math.max(MIN_HOLD_MS, retryAfterMs ?? 0);
            await sleep(Math.min(intervalMs, baseMs + random() * RECONNECT_JITTER_MS), ctx.signal);
          } else if (askedToHold && heldMs < MIN_HOLD_MS) {
            // A change right away is normal, but a server that reports one on every request must not make us spin.
            await sleep(MIN_HOLD_MS - heldMs, ctx.signal);
          }
        } catch (error) {
          if (ctx.signal?.aborted) break;
          // Shown in the world-readable status file, as the collectors' reasons are: redacted as the log is.
          state.lastError = redactText((error as Error).message);
          state.state = 'backoff';
          // Equal jitter (half fixed, half random): agents refused together retry apart.
          let retryInMs = Math.round(backoffMs / 2 + (random() * backoffMs) / 2);
          if (error instanceof RateLimitedError && error.retryAfterMs !== undefined)
            // At least what the server asked for, plus jitter so that the refused ones do not all come back at once.
            retryInMs = Math.round(Math.min(MAX_RETRY_AFTER_MS, error.retryAfterMs) + random() * RECONNECT_JITTER_MS);
          if (!(error instanceof RateLimitedError))
            ctx.log.warn('hearth long-poll failed; retrying', { error: state.lastError, retry_in_ms: retryInMs });
          else if (!rateLimited)
            ctx.log.warn("hearth-server limits this credential's long-polls (429); waiting as it asks, quiet until accepted", {
              error: state.lastError,
              retry_in_ms: retryInMs,
            });
          rateLimited = error instanceof RateLimitedError;
          await sleep(retryInMs, ctx.signal);
          backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
        }
      }
      state.state = 'idle';
    },
    watchState: () => ({ ...state }),
  };
}
