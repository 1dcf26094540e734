import type { AuthKind } from './http.ts';

/** Codes the client itself gives to failures that never got an answer from hearth-server. */
export const CLIENT_ERROR_CODES = ['ERR_CONNECTION', 'ERR_TIMEOUT', 'ERR_TLS', 'ERR_RESPONSE_INVALID'] as const;
/** One of the client's own codes. */
export type ClientErrorCode = (typeof CLIENT_ERROR_CODES)[number];

/** Where a failed call went: method and full URL. */
export interface RequestTarget {
  method: string;
  url: string;
  /** Which credential the call carried: the operator's admin token or a server's agent credential. Default: not known. */
  credential?: AuthKind | undefined;
}

/** hearth-server answered a call with a non-2xx status and a coded error body. */
export class HearthApiError extends Error {
  override readonly name = 'HearthApiError';
  /** HTTP status of the reply (4xx or 5xx). */
  readonly status: number;
  /** Catalogue code, `ERR_...` (ERR_RESPONSE_INVALID when the body was not a hearth error body). */
  readonly code: string;
  /** Extra facts the server attached (offending values, ids). */
  readonly details: Record<string, unknown>;
  /** Method of the failed call. */
  readonly method: string;
  /** URL of the failed call. */
  readonly url: string;
  /** Which credential the failed call carried (operator or agent); undefined when not known. */
  readonly credential: AuthKind | undefined;

  constructor(init: { status: number; code: string; message: string; details?: Record<string, unknown> } & RequestTarget) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? {};
    this.method = init.method;
    this.url = init.url;
    this.credential = init.credential;
  }
}

/** Codes of a call that got no HTTP answer: no connection, no reply in time, or a failed TLS handshake. */
export type ConnectionErrorCode = 'ERR_CONNECTION' | 'ERR_TIMEOUT' | 'ERR_TLS';

/** The call got no HTTP answer: refused, reset, name not resolved, timed out, or TLS failed. */
export class HearthConnectionError extends Error {
  override readonly name = 'HearthConnectionError';
  /** Always 0: there was no HTTP reply. */
  readonly status = 0;
  /** ERR_CONNECTION (no connection), ERR_TIMEOUT (no reply in time) or ERR_TLS (certificate not trusted, or no TLS spoken). */
  readonly code: ConnectionErrorCode;
  /** The low-level cause's code, e.g. ECONNREFUSED or ETIMEDOUT. */
  readonly causeCode: string;
  /** Always empty; present so both error classes can be handled alike. */
  readonly details: Record<string, unknown> = {};
  /** Method of the failed call. */
  readonly method: string;
  /** URL of the failed call. */
  readonly url: string;

  constructor(init: { code: ConnectionErrorCode; causeCode: string; message: string; cause?: unknown } & RequestTarget) {
    super(init.message, { cause: init.cause });
    this.code = init.code;
    this.causeCode = init.causeCode;
    this.method = init.method;
    this.url = init.url;
  }
}

/** Any failure a client call can throw. */
export type HearthClientError = HearthApiError | HearthConnectionError;

/** True for errors thrown by the client (API or connection failures). */
export function isHearthClientError(error: unknown): error is HearthClientError {
  return error instanceof HearthApiError || error instanceof HearthConnectionError;
}
