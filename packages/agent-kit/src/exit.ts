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

/** Resolves once everything written to `stream` so far is handed to the OS. */
function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) resolve();
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
  if (error instanceof Error && process.env.HEARTH_DEBUG && error.stack) process.stderr.write(`${error.stack}\n`);
  return 1;
}

/**
 * Runs an agent's main and exits with its result (undefined -> 0); the only caller of process.exit.
 * An ExitError prints its message on stderr and exits with its code; any other error prints its
 * message (and its stack when HEARTH_DEBUG is set) and exits 1.
 */
export function runMain(main: (argv: string[]) => Promise<number | void>, options: RunMainOptions = {}): void {
  const argv = options.argv ?? process.argv.slice(2);
  void Promise.allSettled([Promise.resolve().then(() => main(argv))]).then(async ([result]) => {
    const code = outcome(result, options.name);
    await Promise.all([flush(process.stdout), flush(process.stderr)]);
    process.exit(code);
  });
}
