import { readFile } from 'node:fs/promises';

/** A place `hearth` writes text to. */
export interface TextSink {
  write(text: string): void;
  /** True when it is a terminal (progress lines are then rewritten in place). */
  readonly isTTY?: boolean | undefined;
  /** The terminal's width in columns, when it is one. Default: unknown. */
  readonly columns?: number | undefined;
}

/** Everything `hearth` takes from its process, injected so commands can be tested without one. */
export interface CliIo {
  stdout: TextSink;
  stderr: TextSink;
  /** Environment variables (HEARTH_URL, HEARTH_TOKEN, HEARTH_PROJECT). */
  env: Readonly<Record<string, string | undefined>>;
  /** Reads a UTF-8 file named by a flag; one that is not UTF-8 is refused (see readUtf8File). */
  readTextFile: (path: string) => Promise<string>;
  /** Milliseconds since the epoch. */
  now: () => number;
  /** Calls `listener` on the first Ctrl-C (SIGINT) instead of dying; returns the undo. Default: none (Ctrl-C kills). */
  onInterrupt?: ((listener: () => void) => () => void) | undefined;
}

/** The error code readUtf8File gives a file that is not UTF-8 text. */
export const NOT_UTF8 = 'ERR_NOT_UTF8';

/**
 * Reads a file as UTF-8 text, byte for byte (a BOM is kept). A file that is not UTF-8 is an error with
 * code NOT_UTF8: `readFile(path, 'utf8')` would turn its bytes into U+FFFD and upload a corrupted config.
 */
export async function readUtf8File(path: string): Promise<string> {
  const bytes = await readFile(path);
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw Object.assign(new Error(`${path} is not UTF-8 text`), { code: NOT_UTF8 });
  }
}

/** The CliIo of the running process. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    readTextFile: readUtf8File,
    now: () => Date.now(),
    onInterrupt: (listener) => {
      process.once('SIGINT', listener);
      return () => void process.off('SIGINT', listener);
    },
  };
}

/** The exit code of `hearth` once its stdout's reader has gone (`hearth events --follow | head -2`): 128 + SIGPIPE, as a shell reports coreutils. */
export const STDOUT_CLOSED_EXIT = 141;

/** Resolves once everything written to `stream` so far is handed to the OS, or its failure is reported as an 'error' event. */
export function flushed(stream: NodeJS.WritableStream & { destroyed?: boolean }): Promise<void> {
  return new Promise((resolve) => {
    // A write that just failed left the stream unwritable; its 'error' event comes on the next tick, before this.
    if (stream.destroyed === true || !stream.writable) setImmediate(resolve);
    else stream.write('', () => resolve());
  });
}
