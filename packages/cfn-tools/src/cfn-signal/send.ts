// PUTs the signal body to the handle URL with no Content-Type (as the original's curl -H 'Content-Type:'),
// retrying connection errors, timeouts and 5xx with a doubling delay; any other status is the answer.
import { setTimeout as sleep } from 'node:timers/promises';
import { HttpRequestError, type HttpRequestOptions, type HttpResponse } from '@hearth/agent-kit/http';

/** Options of sendSignal. */
export interface SendSignalOptions {
  url: string;
  body: string;
  insecure: boolean;
  /** Extra attempts after a connection error, timeout or 5xx. */
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
    const retryable = outcome.kind === 'error' || outcome.response.status >= 500;
    if (!retryable || attempt > options.retries) return outcome;
    const delayMs = Math.min(options.retryDelayMs * 2 ** (attempt - 1), MAX_DELAY_MS);
    const reason = outcome.kind === 'error' ? outcome.error.message : `status ${outcome.response.status}`;
    options.onRetry?.(attempt, reason, delayMs);
    await sleep(delayMs);
  }
}
