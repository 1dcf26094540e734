import { ERRORS, formatErrorMessage, type ErrorCode } from '@hearth/protocol';

/** An error a client can meet: a catalogue code, its HTTP status and details for the message. */
export class HearthError extends Error {
  /** Catalogue code, e.g. ERR_CONFIG_NOT_FOUND. */
  readonly code: ErrorCode;
  /** HTTP status from the catalogue. */
  readonly statusCode: number;
  /** Values that fill the message and are returned to the client. */
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, details: Record<string, unknown> = {}) {
    super(formatErrorMessage(code, details));
    this.name = 'HearthError';
    this.code = code;
    this.statusCode = ERRORS[code].status;
    this.details = details;
  }
}

/** True when a value is a HearthError. */
export function isHearthError(value: unknown): value is HearthError {
  return value instanceof HearthError;
}
