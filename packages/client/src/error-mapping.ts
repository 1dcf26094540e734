import type { ErrorBody } from '@hearth/protocol';
import { HearthApiError, HearthConnectionError, type RequestTarget } from './errors.ts';

/** Low-level error codes that mean "no reply in time" rather than "no connection". */
const TIMEOUT_CAUSES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT']);

/** OpenSSL's codes for a certificate Node does not trust (node:tls sets them on the error). */
const CERTIFICATE_CAUSES = new Set([
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

/** The readable part of a TLS error message: OpenSSL's reason (`wrong version number`) rather than its whole line. */
function tlsReason(message: string): string {
  const openssl = /:SSL routines:[^:]*:([^:]+)/.exec(message);
  return (openssl?.[1] ?? message).replace(/\s+/g, ' ').trim();
}

/**
 * What a TLS failure means for the user, or undefined when `causeCode` is not one: the certificate
 * is not trusted, or the other end does not speak TLS (an https:// URL for a plain-HTTP server gives
 * EPROTO / ERR_SSL_WRONG_VERSION_NUMBER).
 */
function tlsProblem(causeCode: string, cause: unknown, baseUrl: string): string | undefined {
  const reason = cause instanceof Error ? tlsReason(cause.message) : '';
  const detail = reason === '' ? causeCode : `${causeCode}: ${reason}`;
  if (CERTIFICATE_CAUSES.has(causeCode)) {
    return (
      `the TLS certificate of hearth-server at ${baseUrl} is not trusted (${detail}): ` +
      'give Node its CA with NODE_EXTRA_CA_CERTS=/path/to/ca.pem, or check that HEARTH_URL names the host the certificate is for.'
    );
  }
  if (causeCode === 'EPROTO' || causeCode.startsWith('ERR_SSL_')) {
    return `TLS with ${baseUrl} failed (${detail}): if hearth-server serves plain HTTP there, ` + 'use an http:// URL in HEARTH_URL.';
  }
  return undefined;
}

/** True when `value` has the shape of hearth's coded error body. */
export function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null) return false;
  const inner = (value as { error?: unknown }).error;
  if (typeof inner !== 'object' || inner === null) return false;
  const { code, message } = inner as { code?: unknown; message?: unknown };
  return typeof code === 'string' && typeof message === 'string';
}

/** Builds the HearthApiError for a non-2xx reply from its status and raw body text. */
export function apiErrorFromReply(reply: { status: number; bodyText: string } & RequestTarget): HearthApiError {
  const { status, bodyText, method, url, credential } = reply;
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = undefined;
  }
  if (isErrorBody(parsed)) {
    const { code, message, details } = parsed.error;
    return new HearthApiError({ status, code, message, details: details ?? {}, method, url, credential });
  }
  const excerpt = bodyText.trim().slice(0, 200);
  return new HearthApiError({
    status,
    code: 'ERR_RESPONSE_INVALID',
    message:
      `${method} ${url} answered HTTP ${status} without a hearth error body` +
      `${excerpt ? ` (${JSON.stringify(excerpt)})` : ''}: check that HEARTH_URL points at hearth-server.`,
    method,
    url,
    credential,
  });
}

/**
 * Builds the error for a 3xx reply (other than 304) the client did not follow: one to another origin,
 * where got would resend the X-Auth-Token header (see sameOriginRedirects).
 */
export function redirectError(reply: { status: number; location: string | undefined } & RequestTarget): HearthApiError {
  const { status, location, method, url, credential } = reply;
  const where = location === undefined ? 'without a Location' : `to ${location}`;
  return new HearthApiError({
    status,
    code: 'ERR_RESPONSE_INVALID',
    message:
      `${method} ${url} answered HTTP ${status}, a redirect ${where}; hearth follows redirects only within HEARTH_URL's ` +
      'origin, so that its token goes nowhere else: set HEARTH_URL to the address hearth-server answers on.',
    method,
    url,
    credential,
  });
}

/** Builds the error for a 2xx reply whose body is not the JSON the endpoint promises. */
export function invalidBodyError(reply: { status: number; bodyText: string } & RequestTarget): HearthApiError {
  const { status, bodyText, method, url } = reply;
  return new HearthApiError({
    status,
    code: 'ERR_RESPONSE_INVALID',
    message:
      `${method} ${url} answered HTTP ${status} with a body that is not JSON ` +
      `(${JSON.stringify(bodyText.trim().slice(0, 200))}): check that HEARTH_URL points at hearth-server.`,
    method,
    url,
  });
}

/** A duration for messages: `30 s`, `2.5 s`, or `800 ms` under a second. */
export function formatDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${Number((ms / 1000).toFixed(1))} s`;
}

/**
 * Builds the HearthConnectionError for a call that got no HTTP reply (`causeCode` like ECONNREFUSED).
 * `timeoutMs` is the limit of each attempt and `attempts` how many were made (default 1), so that a
 * timeout says how long the caller really waited.
 */
/** Causes that mean the connection was made and then cut, rather than never made. */
const CUT_CAUSES = new Set(['EPIPE', 'ECONNRESET']);

export function connectionErrorFrom(
  cause: unknown,
  target: RequestTarget & { baseUrl: string; timeoutMs: number; attempts?: number | undefined },
): HearthConnectionError {
  const causeCode = errorCodeOf(cause) ?? 'EUNKNOWN';
  const { method, url, baseUrl, timeoutMs } = target;
  const attempts = target.attempts ?? 1;
  if (TIMEOUT_CAUSES.has(causeCode)) {
    const within =
      attempts > 1 ? `within ${formatDuration(timeoutMs)} on each of ${attempts} attempts` : `within ${formatDuration(timeoutMs)}`;
    return new HearthConnectionError({
      code: 'ERR_TIMEOUT',
      causeCode,
      message: `hearth-server at ${baseUrl} did not answer ${method} ${url} ${within}: check HEARTH_URL and the server's health.`,
      method,
      url,
      cause,
    });
  }
  const tls = tlsProblem(causeCode, cause, baseUrl);
  if (tls !== undefined) return new HearthConnectionError({ code: 'ERR_TLS', causeCode, message: tls, method, url, cause });
  // The server took the connection and then cut it: it stopped, or refused a body over its limit (a 413
  // that arrives while the body is still being sent is seen as a broken pipe or a reset).
  const cut = CUT_CAUSES.has(causeCode);
  return new HearthConnectionError({
    code: 'ERR_CONNECTION',
    causeCode,
    message: cut
      ? `hearth-server at ${baseUrl} cut the connection during ${method} ${url} (${causeCode}): it stopped, or the request body was over its limit.`
      : `Cannot reach hearth-server at ${baseUrl} (${causeCode}): check HEARTH_URL and that hearth-server is running.`,
    method,
    url,
    cause,
  });
}

/** The `code` property of an error-like value (got and Node set it), if it is a string. */
export function errorCodeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
