import { redactText } from './redact.ts';

/** Thrown by agent code to end the process with `code`; runMain prints `message` (if any) on stderr. */
export class ExitError extends Error {
  override readonly name = 'ExitError';
  /** The process exit code. */
  readonly exitCode: number;

  constructor(code: number, message: string) {
    super(message);
    this.exitCode = code;
  }

  /** The same as exitCode. */
  get code(): number {
    return this.exitCode;
  }
}

/** Options of runMain. */
export interface RunMainOptions {
  /** Arguments given to main. Default process.argv.slice(2). */
  argv?: string[];
  /** Prefix for messages printed on stderr (`name: message`). Default none. */
  name?: string;
}

/** Resolves once everything written to `stream` so far is handed to the OS, or its failure is reported as an 'error' event. */
function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    // A write that just failed left the stream unwritable; its 'error' event comes on the next tick, before this.
    if (stream.destroyed || !stream.writable) setImmediate(resolve);
    else stream.write('', () => resolve());
  });
}

/** The exit code for what main returned or threw, after printing a thrown error's message. */
function outcome(result: PromiseSettledResult<number | void>, name: string | undefined): number {
  if (result.status === 'fulfilled') return result.value ?? 0;
  const error: unknown = result.reason;
  const say = (message: string): void => {
    // Messages quote servers' replies and URLs: secret query values and what JSON.parse errors quote stay out.
    if (message !== '') process.stderr.write(`${name ? `${name}: ` : ''}${redactText(message)}\n`);
  };
  if (error instanceof ExitError) {
    say(error.message);
    return error.exitCode;
  }
  say(error instanceof Error ? error.message || error.name : String(error));
  // The stack starts with the message again: redacted as the message is.
  if (error instanceof Error && process.env.HEARTH_DEBUG && error.stack) process.stderr.write(`${redactText(error.stack)}\n`);
  return 1;
}

/** The exit code of a command whose stdout was closed by its reader (`| head -1`): 128 + SIGPIPE, as a shell reports coreutils. */
export const STDOUT_CLOSED_EXIT = 141;

/** The first error writing stdout met, if any (process.stdout forgets it: it stays writable after an error). */
let stdoutError: NodeJS.ErrnoException | undefined;

/** The exit code once output is flushed: a succeeded main whose stdout could not be written does not report success. */
function afterOutput(code: number, name: string | undefined): number {
  if (code !== 0 || !stdoutError) return code;
  if (stdoutError.code === 'EPIPE') return STDOUT_CLOSED_EXIT;
  process.stderr.write(`${name ? `${name}: ` : ''}cannot write stdout: ${stdoutError.message}\n`);
  return 1;
}

/** Keeps stdout's first error for afterOutput. */
function keepStdoutError(error: NodeJS.ErrnoException): void {
  stdoutError ??= error;
}

/** Swallows an error writing stderr: the lines are lost, nothing else is. */
function ignore(): void {
  // Nothing to do: see runMain.
}

/**
 * Runs an agent's main and exits with its result (undefined -> 0); the only caller of process.exit.
 * An ExitError prints its message on stderr and exits with its code; any other error prints its
 * message (and its stack when HEARTH_DEBUG is set) and exits 1. A stdout closed early (`| head -1`)
 * neither crashes main nor cuts it short: its work completes, then it exits STDOUT_CLOSED_EXIT (141)
 * if it succeeded; other stdout write errors make a success exit 1. A closed stderr loses the lines only.
 */
export function runMain(main: (argv: string[]) => Promise<number | void>, options: RunMainOptions = {}): void {
  const argv = options.argv ?? process.argv.slice(2);
  // Without a listener a write to a pipe whose reader left throws (EPIPE) from an event, with a stack trace, in the
  // middle of whatever main was doing (an install, a lock held): what was lost is looked at once main is done.
  process.stdout.on('error', keepStdoutError);
  process.stderr.on('error', ignore);
  void Promise.allSettled([Promise.resolve().then(() => main(argv))]).then(async ([result]) => {
    const code = outcome(result, options.name);
    await Promise.all([flush(process.stdout), flush(process.stderr)]);
    process.exit(afterOutput(code, options.name));
  });
}
