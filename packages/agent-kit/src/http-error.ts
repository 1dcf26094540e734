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

/** OpenSSL's codes for a certificate Node does not trust (node:tls sets them on the error). */
const UNTRUSTED_CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'CERT_REVOKED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * What a TLS failure of a request to `host` means and what to do, or undefined when `error` is not one. A bare
 * `unable to verify the first certificate` names neither TLS nor the fix, and an agent's log is all a VM's operator has.
 */
export function tlsFailureDetail(error: NodeJS.ErrnoException, host: string): string | undefined {
  const code = error.code ?? '';
  // OpenSSL's reason (`wrong version number`) rather than its whole line.
  const reason = (/:SSL routines:[^:]*:([^:]+)/.exec(error.message)?.[1] ?? error.message).replace(/\s+/g, ' ').trim();
  if (UNTRUSTED_CERTIFICATE_CODES.has(code)) {
    return (
      `the TLS certificate of ${host} is not trusted (${code}: ${reason}): give the CA that signed it ` +
      "(NODE_EXTRA_CA_CERTS=/path/to/ca.pem, or the tool's CA option), or check that the URL names the host the certificate is for"
    );
  }
  if (code === 'EPROTO' || code.startsWith('ERR_SSL_'))
    return `TLS with ${host} failed (${code}: ${reason}): if the server speaks plain HTTP there, use an http:// URL`;
  return undefined;
}
