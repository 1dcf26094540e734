// PUTs the signal body to the handle URL with no Content-Type (as the original's curl -H 'Content-Type:'),
// retrying connection errors, timeouts, 429 and 5xx with a doubling delay (at least a 429's Retry-After); any
// other status is the answer.
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpRequestError, type HttpRequestOptions, type HttpResponse } from '@hearth/agent-kit/http';

/** Options of sendSignal. */
export interface SendSignalOptions {
  url: string;
  body: string;
  insecure: boolean;
  /** Extra attempts after a connection error, timeout, 429 or 5xx. */
  retries: number;
  /** Per attempt, ms. */
  timeoutMs: number;
  /** Wait before the first retry, doubled each time up to 30 s, ms. */
  retryDelayMs: number;
  http: (options: HttpRequestOptions) => Promise<HttpResponse>;
  /** Told about each failed attempt that will be retried. */
  onRetry?: (attempt: number, reason: string, delayMs: number) => void;
}

/** The outcome of sending: the last response, or the error of the last attempt. */
export type SendOutcome =
  { kind: 'response'; response: HttpResponse; attempts: number } | { kind: 'error'; error: HttpRequestError; attempts: number };

const MAX_DELAY_MS = 30_000;

/** A 429's Retry-After is waited up to this long (a proxy's hour would outlast any wait condition). */
const MAX_RETRY_AFTER_MS = 5 * 60_000;

/** Retry-After in ms when it is a number of seconds; undefined otherwise. */
function retryAfterMs(response: HttpResponse): number | undefined {
  const value = response.headers['retry-after'];
  return typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : undefined;
}

/** Sends the signal; never throws for HTTP or network failures (they are the outcome). */
export async function sendSignal(options: SendSignalOptions): Promise<SendOutcome> {
  for (let attempt = 1; ; attempt++) {
    let outcome: SendOutcome;
    try {
      const response = await options.http({
        method: 'PUT',
        url: options.url,
        body: options.body,
        headers: { accept: '*/*' },
        timeoutMs: options.timeoutMs,
        insecure: options.insecure,
        retries: 0,
      });
      outcome = { kind: 'response', response, attempts: attempt };
    } catch (error) {
      if (!(error instanceof HttpRequestError) || error.code === 'ERR_HTTP_INVALID_URL') throw error;
      outcome = { kind: 'error', error, attempts: attempt };
    }
    // A 429 (rate limited) is the server asking to come back later: given up on at once, the signal was lost.
    const retryable = outcome.kind === 'error' || outcome.response.status >= 500 || outcome.response.status === 429;
    if (!retryable || attempt > options.retries) return outcome;
    const asked = outcome.kind === 'response' && outcome.response.status === 429 ? retryAfterMs(outcome.response) : undefined;
    const delayMs = Math.max(Math.min(options.retryDelayMs * 2 ** (attempt - 1), MAX_DELAY_MS), Math.min(asked ?? 0, MAX_RETRY_AFTER_MS));
    const reason = outcome.kind === 'error' ? outcome.error.message : `status ${outcome.response.status}`;
    options.onRetry?.(attempt, reason, delayMs);
    await sleep(delayMs);
  }
}
