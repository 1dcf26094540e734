// The one error agent-kit's HTTP client throws when a request got no complete response.
import { redactUrl } from './redact.ts';

/** Codes of HttpRequestError. */
export type HttpErrorCode =
  'ERR_HTTP_TIMEOUT' | 'ERR_HTTP_ABORTED' | 'ERR_HTTP_NETWORK' | 'ERR_HTTP_INVALID_URL' | 'ERR_HTTP_BODY_TOO_LARGE';

/** The request got no complete response: network failure, timeout, abort, bad URL or oversized body. */
export class HttpRequestError extends Error {
  override readonly name = 'HttpRequestError';
  /** What went wrong, from the catalogue above. */
  readonly code: HttpErrorCode;
  /** The URL, with secret query values (Signature, temp_url_sig, token...) replaced by `***`. */
  readonly url: string;
  readonly method: string;
  /** The system error code behind a network failure (ECONNREFUSED, ECONNRESET, ENOTFOUND...), if any. */
  readonly systemCode: string | undefined;
  /** How many attempts were made. */
  readonly attempts: number;

  constructor(code: HttpErrorCode, method: string, url: string, detail: string, attempts: number, systemCode?: string) {
    const safeUrl = redactUrl(url);
    const tries = attempts > 1 ? ` (after ${attempts} attempts)` : '';
    super(`${method} ${safeUrl} failed: ${detail}${tries}`);
    this.code = code;
    this.url = safeUrl;
    this.method = method;
    this.systemCode = systemCode;
    this.attempts = attempts;
  }
}
