import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { setLongTimeout } from './long-timer.ts';
import { redactUrl } from './redact.ts';
import { httpAgent, httpsAgentFor } from './http-agents.ts';
import { HttpRequestError, tlsFailureDetail, type HttpErrorCode } from './http-error.ts';

export { closeHttpConnections } from './http-agents.ts';
export { HttpRequestError, type HttpErrorCode } from './http-error.ts';

/** Options of httpRequest. */
export interface HttpRequestOptions {
  /** HTTP method. Default GET. */
  method?: string;
  /** Absolute http:// or https:// URL. */
  url: string;
  /** Request headers. Default: user-agent `hearth-agent`, plus content-length when there is a body. */
  headers?: Record<string, string>;
  /** Request body. Default none. */
  body?: string | Buffer;
  /**
   * Idle limit of one attempt, in ms: to connect and get the response head, then between two chunks of the body
   * (a body that keeps arriving is not cut off, however big; see MIN_BODY_BYTES_PER_SECOND). Default 10000.
   */
  timeoutMs?: number;
  /** How long the server may hold the request before it answers (a long-poll's wait), in ms: added to the wait for the response head only. Default 0. */
  holdMs?: number;
  /** Extra attempts after a network error, timeout or 502/503/504; only for idempotent methods (never POST/PATCH). Default 0. */
  retries?: number;
  /** Wait before the first retry, doubled for each later one (capped at 30 s); a longer Retry-After wins. Default 500. */
  retryDelayMs?: number;
  /** Aborts the request and any wait between retries. */
  signal?: AbortSignal;
  /** CA certificate(s), PEM, trusted for https instead of Node's own (its bundled CAs and NODE_EXTRA_CA_CERTS). Default: Node's. */
  ca?: string | Buffer;
  /** Skip TLS certificate verification (zaqar's ssl_certificate_validation=false). Default false. */
  insecure?: boolean;
  /** Refuse a response body larger than this many bytes. Default 64 MiB. */
  maxBodyBytes?: number;
}

/** A response: any status, 1xx aside, is a response and not an error. */
export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The body as UTF-8. */
  text(): string;
  /** The body parsed as JSON; throws SyntaxError naming the URL when it is not JSON. */
  json<T = unknown>(): T;
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE']);
const RETRY_STATUSES = new Set([502, 503, 504]);
const MAX_RETRY_DELAY_MS = 30_000;
const DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024;

/**
 * The overall cap of a body: past a grace of `timeoutMs` from the response head, it must arrive at this average
 * rate, so that a server trickling a byte now and then cannot hold an agent for ever (64 MiB may take 2.3 h).
 */
export const MIN_BODY_BYTES_PER_SECOND = 8 * 1024;

/** Why one attempt failed, before it becomes an HttpRequestError. */
class AttemptFailure extends Error {
  constructor(
    readonly code: HttpErrorCode,
    detail: string,
    readonly systemCode?: string,
    /** The request went out on a pooled connection that turned out to be closed, before any response byte. */
    readonly staleSocket = false,
  ) {
    super(detail);
  }
}

function makeResponse(status: number, headers: IncomingHttpHeaders, body: Buffer, safeUrl: string): HttpResponse {
  return {
    status,
    headers,
    body,
    text: () => body.toString('utf8'),
    json<T = unknown>(): T {
      try {
        return JSON.parse(body.toString('utf8')) as T;
      } catch (error) {
        throw new SyntaxError(`response ${status} from ${safeUrl} is not JSON: ${(error as Error).message}`);
      }
    },
  };
}

interface Attempt {
  url: URL;
  method: string;
  headers: Record<string, string>;
  body: Buffer | undefined;
  timeoutMs: number;
  holdMs: number;
  maxBodyBytes: number;
  agent: http.Agent;
  signal: AbortSignal | undefined;
}

function sendOnce(attempt: Attempt): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const transport = attempt.url.protocol === 'https:' ? https : http;
    let responseStarted = false;
    let settled = false;
    // Monotonic, as long-timer.ts: a wall clock stepped back (NTP) kept a request to a silent server open for the step.
    const startedAt = performance.now();
    let headAt = 0;
    let lastDataAt = 0;
    let received = 0;
    let cancelTimer = (): void => undefined;
    const fail = (failure: AttemptFailure): void => {
      if (settled) return;
      settled = true;
      cleanup();
      reject(failure);
      request.destroy();
    };
    /** The nearest deadline and what missing it means. */
    const nextDeadline = (): { at: number; detail: string } => {
      const { timeoutMs } = attempt;
      if (!responseStarted) {
        const limitMs = timeoutMs + attempt.holdMs;
        return { at: startedAt + limitMs, detail: `no response within ${limitMs} ms` };
      }
      const idleAt = lastDataAt + timeoutMs;
      const rateAt = headAt + timeoutMs + (received * 1000) / MIN_BODY_BYTES_PER_SECOND;
      if (idleAt <= rateAt) return { at: idleAt, detail: `the body stalled: no data for ${timeoutMs} ms after ${received} bytes` };
      const tookMs = Math.round(performance.now() - headAt);
      return {
        at: rateAt,
        detail: `the body came too slowly: ${received} bytes in ${tookMs} ms, below ${MIN_BODY_BYTES_PER_SECOND} bytes/s`,
      };
    };
    // One timer at the nearest deadline; data only moves deadlines later, so it is not re-armed per chunk.
    // A missed deadline is looked at again after pending I/O (setImmediate runs after the poll phase): timers run
    // first, so after the process did not run for a while (a loaded VM, a long GC) the timer fires before the data
    // that came meanwhile is read, and a body that kept arriving would be cut off as stalled.
    const watchDeadline = (afterIo = false): void => {
      const deadline = nextDeadline();
      const leftMs = deadline.at - performance.now();
      if (leftMs > 0) cancelTimer = setLongTimeout(() => watchDeadline(), leftMs);
      else if (afterIo) fail(new AttemptFailure('ERR_HTTP_TIMEOUT', deadline.detail));
      else {
        const immediate = setImmediate(() => watchDeadline(true));
        cancelTimer = () => clearImmediate(immediate);
      }
    };
    const request = transport.request(attempt.url, { method: attempt.method, headers: attempt.headers, agent: attempt.agent });
    watchDeadline();
    const onAbort = (): void => fail(new AttemptFailure('ERR_HTTP_ABORTED', 'aborted'));
    const cleanup = (): void => {
      cancelTimer();
      attempt.signal?.removeEventListener('abort', onAbort);
    };
    attempt.signal?.addEventListener('abort', onAbort, { once: true });
    request.on('error', (error: NodeJS.ErrnoException) => {
      const stale = request.reusedSocket && !responseStarted && (error.code === 'ECONNRESET' || error.code === 'EPIPE');
      fail(new AttemptFailure('ERR_HTTP_NETWORK', tlsFailureDetail(error, attempt.url.host) ?? error.message, error.code, stale));
    });
    request.on('response', (response) => {
      responseStarted = true;
      headAt = lastDataAt = performance.now();
      // The head may come well before the held deadline: from now on the body's (shorter) deadlines apply.
      cancelTimer();
      watchDeadline();
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => {
        lastDataAt = performance.now();
        received += chunk.length;
        if (received > attempt.maxBodyBytes) {
          fail(new AttemptFailure('ERR_HTTP_BODY_TOO_LARGE', `response body larger than ${attempt.maxBodyBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      response.on('error', (error: NodeJS.ErrnoException) =>
        fail(new AttemptFailure('ERR_HTTP_NETWORK', `response body cut off: ${error.message}`, error.code)),
      );
      response.on('end', () => {
        if (settled) return;
        if (!response.complete) {
          fail(new AttemptFailure('ERR_HTTP_NETWORK', 'response body cut off: connection closed early', 'ECONNRESET'));
          return;
        }
        settled = true;
        cleanup();
        resolve(makeResponse(response.statusCode ?? 0, response.headers, Buffer.concat(chunks), redactUrl(attempt.url.href)));
      });
    });
    if (attempt.signal?.aborted) {
      onAbort();
      return;
    }
    request.end(attempt.body);
  });
}

/** Retry-After in ms when it is a number of seconds or an HTTP date; undefined otherwise. */
function retryAfterMs(response: HttpResponse): number | undefined {
  const value = response.headers['retry-after'];
  if (value === undefined) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/**
 * Sends one HTTP(S) request over keep-alive connections (node:http, no fetch: agents start fast and stay small).
 * Any status is a response. Network errors and timeouts throw HttpRequestError. Idempotent methods are retried
 * `retries` times on network errors, timeouts and 502/503/504 (the last such response is returned as is).
 * An idempotent request that met a pooled connection the server had just closed is re-sent once on a new
 * connection, even with `retries` 0. POST and PATCH are never sent twice: the caller (the outbox) owns that.
 */
export async function httpRequest(options: HttpRequestOptions): Promise<HttpResponse> {
  const method = (options.method ?? 'GET').toUpperCase();
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw new HttpRequestError('ERR_HTTP_INVALID_URL', method, options.url, 'not an absolute URL', 1);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new HttpRequestError('ERR_HTTP_INVALID_URL', method, options.url, `unsupported protocol ${url.protocol} (use http or https)`, 1);
  }
  const body = options.body === undefined ? undefined : Buffer.isBuffer(options.body) ? options.body : Buffer.from(options.body, 'utf8');
  const headers: Record<string, string> = { 'user-agent': 'hearth-agent' };
  for (const [name, value] of Object.entries(options.headers ?? {})) headers[name.toLowerCase()] = value;
  if (body !== undefined && headers['content-length'] === undefined) headers['content-length'] = String(body.length);
  const attempt: Attempt = {
    url,
    method,
    headers,
    body,
    timeoutMs: options.timeoutMs ?? 10_000,
    holdMs: options.holdMs ?? 0,
    maxBodyBytes: options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES,
    agent: url.protocol === 'https:' ? httpsAgentFor(options.ca, options.insecure ?? false) : httpAgent,
    signal: options.signal,
  };
  const idempotent = IDEMPOTENT_METHODS.has(method);
  const retries = idempotent ? Math.max(0, options.retries ?? 0) : 0;
  const baseDelayMs = options.retryDelayMs ?? 500;
  let attempts = 0;
  let resentStale = false;
  for (;;) {
    attempts += 1;
    const delayMs = Math.min(baseDelayMs * 2 ** (attempts - 1), MAX_RETRY_DELAY_MS);
    try {
      const response = await sendOnce(attempt);
      if (!RETRY_STATUSES.has(response.status) || attempts > retries) return response;
      await pause(Math.min(Math.max(delayMs, retryAfterMs(response) ?? 0), MAX_RETRY_DELAY_MS), options.signal, method, url, attempts);
    } catch (error) {
      if (!(error instanceof AttemptFailure)) throw error;
      if (error.staleSocket && idempotent && !resentStale) {
        resentStale = true;
        attempts -= 1;
        continue;
      }
      const retryable = error.code === 'ERR_HTTP_NETWORK' || error.code === 'ERR_HTTP_TIMEOUT';
      if (!retryable || attempts > retries)
        throw new HttpRequestError(error.code, method, url.href, error.message, attempts, error.systemCode);
      await pause(delayMs, options.signal, method, url, attempts);
    }
  }
}

/** Waits between attempts; an abort ends the wait with ERR_HTTP_ABORTED. */
async function pause(ms: number, signal: AbortSignal | undefined, method: string, url: URL, attempts: number): Promise<void> {
  try {
    await sleep(ms, undefined, signal ? { signal } : undefined);
  } catch {
    throw new HttpRequestError('ERR_HTTP_ABORTED', method, url.href, 'aborted while waiting to retry', attempts);
  }
}
