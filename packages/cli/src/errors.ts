/** The exit codes of `hearth`, in one place (sysexits.h values for usage and unavailable). */
export const EXIT = {
  /** The command did what was asked. */
  OK: 0,
  /** The operation failed: a FAILED deployment or wait condition, or hearth-server answered 4xx/5xx. */
  FAILED: 1,
  /** `deployment wait` or `waitcondition wait` reached its own --timeout. */
  TIMEOUT: 2,
  /** Bad flags or arguments, or missing settings (EX_USAGE). */
  USAGE: 64,
  /** hearth-server could not be reached (EX_UNAVAILABLE). */
  UNAVAILABLE: 69,
  /** A wait stopped by Ctrl-C (SIGINT): 128 + 2, as a shell reports a process SIGINT ended. */
  INTERRUPTED: 130,
} as const;

/** One of the exit codes above. */
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Extra facts an ExitError shows after its message. */
export interface ExitErrorInit {
  /** What to do about it, shown as `hearth: hint: ...`. Default: none. */
  hint?: string | undefined;
  /** A catalogue code (ERR_...) shown after the message. Default: none. */
  code?: string | undefined;
}

/**
 * Thrown by commands to end `hearth` with an exit code; bin.ts turns it into process.exit.
 * An empty message prints nothing (the command already said what happened).
 */
export class ExitError extends Error {
  override readonly name = 'ExitError';
  /** The process exit code. */
  readonly exitCode: ExitCode;
  /** What to do about it. */
  readonly hint: string | undefined;
  /** A catalogue code (ERR_...). */
  readonly code: string | undefined;

  constructor(exitCode: ExitCode, message = '', init: ExitErrorInit = {}) {
    super(message);
    this.exitCode = exitCode;
    this.hint = init.hint;
    this.code = init.code;
  }
}

/** An ExitError for bad flags or arguments (exit 64). */
export function usageError(message: string, hint?: string): ExitError {
  return new ExitError(EXIT.USAGE, message, { hint, code: 'ERR_USAGE' });
}
