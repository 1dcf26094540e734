// Running a command (execa) and reporting how it ended. Only the last OUTPUT_KEPT_BYTES of stdout and of stderr
// are kept, so a command that talks without end neither fills memory nor is stopped for it (execa's own buffer
// has a 100 MB maxBuffer that killed it mid-run with SIGPIPE). And the result comes when the command exits, not when every
// process it left behind has closed stdout/stderr: cfn-init's `nohup myd &` would have waited for ever, or until
// a timeout killed the daemon too.
import { closeSync, existsSync, openSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Options as ExecaOptions } from 'execa';
import { setLongTimeout } from './long-timer.ts';
import { OutputTail } from './output-tail.ts';
import { stopProcessTree } from './process-tree.ts';

/** Options of runProcess. */
export interface RunProcessOptions {
  /** Working directory. Default process.cwd(). */
  cwd?: string;
  /** Environment variables for the child (added to process.env unless extendEnv is false). Default none. */
  env?: NodeJS.ProcessEnv;
  /** Start from process.env and add `env` to it; false gives the child `env` alone. Default true. */
  extendEnv?: boolean;
  /** Written to the child's stdin, which is then closed. Default: stdin is /dev/null. */
  input?: string;
  /**
   * The child's stdin is this file, opened here and read by the child itself (not `input`): it gets all of it even
   * when this process dies while it reads, where a pipe would end at whatever this process had written.
   */
  inputFile?: string;
  /**
   * After this many ms send SIGTERM to the child and every process below it, and SIGKILL to those still
   * there `killGraceMs` later (as os-refresh-config's --timeout does). Default: no limit.
   */
  timeoutMs?: number;
  /** Wait between SIGTERM and SIGKILL after a timeout or `stop`, in ms. Default 5000. */
  killGraceMs?: number;
  /** After the child exits, how long to wait for processes it left behind to close stdout/stderr, in ms. Default 2000. */
  outputGraceMs?: number;
  /**
   * Once aborted, stop the child and every process below it as a timeout does (not counted as one). Aborted before
   * the start, the command is not started and stderr gives the abort reason. Default none.
   */
  stop?: AbortSignal;
  /** Run `command` (with `args` appended, space-joined) through /bin/sh. Default false. */
  shell?: boolean;
  /** Let the child write straight to this process's stdout/stderr instead of capturing them. Default false. */
  inheritOutput?: boolean;
  /**
   * Give the child this process's file descriptor 3 as its own fd 3 (heat-config's progress channel:
   * a hook passes it on to the tool it runs). Ignored when this process has no fd 3. Default false.
   */
  inheritFd3?: boolean;
}

/** How a child process ended; the same fields whether it succeeded or not. */
export interface ProcessResult {
  /** The command line as run, quoted where needed. */
  command: string;
  /** The directory it ran in. */
  cwd: string;
  /** Its exit code; null when it did not exit on its own (killed, timed out, or never started). */
  exitCode: number | null;
  /** The signal that ended it (e.g. SIGTERM after a timeout), or null. */
  signal: string | null;
  /** What it wrote to stdout (the last OUTPUT_KEPT_BYTES), untrimmed ('' with inheritOutput). */
  stdout: string;
  /** The same for stderr, followed by a line saying why when it did not exit by itself. */
  stderr: string;
  /** Wall time from spawn to end, in ms. */
  durationMs: number;
  /** Whether timeoutMs ran out. */
  timedOut: boolean;
  /** Whether it did not exit 0 (non-zero exit, signal, timeout, or could not start). */
  failed: boolean;
}

/** What runProcess returns: how the child ended, and how much of its output was dropped from the front. */
export interface RunProcessResult extends ProcessResult {
  /** Characters of stdout dropped before the kept end (OUTPUT_KEPT_BYTES); 0 when it is whole. */
  stdoutCutChars: number;
  /** The same for stderr. */
  stderrCutChars: number;
}

const NO_QUOTE = /^[\w./-]+$/;

/** A run's command line as execa's escapedCommand shows it, for runs that never reach execa. */
function shown(command: string, args: string[]): string {
  return [command, ...args]
    .map((arg) => {
      if (NO_QUOTE.test(arg)) return arg;
      // eslint-disable-next-line no-control-regex -- control characters are what is escaped
      const escaped = arg.replace(/[\u0000-\u001f\u007f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
      return `'${escaped.replaceAll("'", "'\\''")}'`;
    })
    .join(' ');
}

/** How the run ended, as far as the reason line is concerned. */
interface Ending {
  exitCode: number | undefined;
  signal: string | undefined;
  /** execa's error code when it could not start (ENOENT, EACCES) and its message. */
  code?: string | undefined;
  originalMessage?: string | undefined;
}

/** What to add to stderr when the child did not end with an exit code of its own. */
function failureReason(ended: Ending, cwd: string, timedOut: boolean, timeoutMs: number | undefined): string | undefined {
  if (timedOut && ended.signal !== undefined) return `timed out after ${timeoutMs} ms and was killed with ${ended.signal}`;
  if (timedOut) return `timed out after ${timeoutMs} ms and exited with code ${ended.exitCode} after SIGTERM`;
  if (ended.exitCode !== undefined) return undefined;
  if (ended.signal !== undefined) return `killed by ${ended.signal}`;
  if (ended.code === 'ENOENT' && !existsSync(cwd)) return `could not start: working directory ${cwd} does not exist`;
  if (ended.code === 'ENOENT') return `could not start: executable not found (${ended.originalMessage ?? 'ENOENT'})`;
  return `could not start: ${ended.originalMessage ?? ended.code ?? 'unknown error'}`;
}

/** A run that was never started (a NUL in its strings, or `stop` aborted first): failed, with the reason on stderr. */
function notStarted(commandLine: string, cwd: string, reason: string): RunProcessResult {
  return {
    command: commandLine,
    cwd,
    exitCode: null,
    signal: null,
    stdout: '',
    stderr: `${commandLine}: ${reason}\n`,
    durationMs: 0,
    timedOut: false,
    failed: true,
    stdoutCutChars: 0,
    stderrCutChars: 0,
  };
}

/**
 * Runs a command (execa, loaded on first use so agents that never spawn do not pay for it) and reports how
 * it ended. Never throws for a non-zero exit, a timeout or a missing executable: those come back with
 * failed=true (and exitCode null unless the child exited itself).
 */
export async function runProcess(command: string, args: string[], options: RunProcessOptions = {}): Promise<RunProcessResult> {
  const cwd = resolve(options.cwd ?? process.cwd());
  // No argument, variable or path can hold a NUL (execve takes C strings); execa would throw a TypeError.
  if ([command, ...args, cwd, ...Object.values(options.env ?? {})].some((text) => text?.includes('\0'))) {
    return notStarted(
      shown(command, args),
      cwd,
      'could not start: an argument, environment variable or the working directory contains a NUL byte',
    );
  }
  if (options.stop?.aborted) return notStarted(shown(command, args), cwd, `not started: ${String(options.stop.reason)}`);
  const { execa } = await import('execa');
  let inputFd: number | undefined;
  if (options.inputFile !== undefined) {
    try {
      inputFd = openSync(options.inputFile, 'r');
    } catch (error) {
      return notStarted(
        shown(command, args),
        cwd,
        `not started: cannot read ${options.inputFile}: ${(error as NodeJS.ErrnoException).code}`,
      );
    }
  }
  const output = options.inheritOutput ? 'inherit' : 'pipe';
  const execaOptions = {
    cwd,
    env: options.env,
    extendEnv: options.extendEnv ?? true,
    shell: options.shell ?? false,
    reject: false,
    // Not buffered by execa (its maxBuffer stops the command at 100 MB): the tails below keep the end.
    buffer: false,
    stdio: [
      // execa hands any descriptor to spawn as it is; its types name only 0 and 3-9.
      (inputFd ?? (options.input === undefined ? 'ignore' : 'pipe')) as 'ignore' | 'pipe' | 3,
      output,
      output,
      ...(options.inheritFd3 === true && existsSync('/proc/self/fd/3') ? (['inherit'] as const) : []),
    ],
    ...(options.input === undefined ? {} : { input: options.input }),
  } satisfies ExecaOptions;
  let subprocess: ReturnType<typeof execa<typeof execaOptions>>;
  try {
    subprocess = execa(command, args, execaOptions);
  } finally {
    // The child has its own copy of the descriptor once spawned.
    if (inputFd !== undefined) closeSync(inputFd);
  }
  const stdout = new OutputTail();
  const stderr = new OutputTail();
  subprocess.stdout?.on('data', (chunk: Buffer | string) => stdout.push(Buffer.from(chunk)));
  subprocess.stderr?.on('data', (chunk: Buffer | string) => stderr.push(Buffer.from(chunk)));
  let timedOut = false;
  // Not awaited, and not cancelled when the child ends: one below it that ignores SIGTERM still gets the SIGKILL.
  const stopTree = (): void => {
    if (subprocess.pid !== undefined) void stopProcessTree(subprocess.pid, { graceMs: options.killGraceMs ?? 5000 });
  };
  const cancelTimeout =
    options.timeoutMs === undefined
      ? undefined
      : setLongTimeout(() => {
          if (subprocess.pid === undefined) return;
          timedOut = true;
          stopTree();
        }, options.timeoutMs);
  options.stop?.addEventListener('abort', stopTree, { once: true });
  // Once the child is gone, what it left running is no longer its run's: a timeout must not kill a daemon it
  // started, and a daemon holding stdout/stderr open must not hold the result. What it writes within the grace
  // is kept; then the pipes are closed (execa takes a destroyed output stream as an end, not an error).
  let graceTimer: NodeJS.Timeout | undefined;
  subprocess.once('exit', () => {
    cancelTimeout?.();
    options.stop?.removeEventListener('abort', stopTree);
    graceTimer = setTimeout(() => {
      subprocess.stdout?.destroy();
      subprocess.stderr?.destroy();
    }, options.outputGraceMs ?? 2000);
  });
  const result = await subprocess;
  clearTimeout(graceTimer);
  cancelTimeout?.();
  options.stop?.removeEventListener('abort', stopTree);
  const out = stdout.result();
  const err = stderr.result();
  const ended = { exitCode: result.exitCode, signal: result.signal, code: result.code, originalMessage: result.originalMessage };
  const reason = failureReason(ended, cwd, timedOut, options.timeoutMs);
  return {
    command: result.escapedCommand,
    cwd: result.cwd,
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    stdout: out.text,
    stderr:
      reason === undefined
        ? err.text
        : `${err.text}${err.text === '' || err.text.endsWith('\n') ? '' : '\n'}${result.escapedCommand}: ${reason}\n`,
    durationMs: Math.round(result.durationMs),
    timedOut,
    failed: result.failed || timedOut,
    stdoutCutChars: out.cutChars,
    stderrCutChars: err.cutChars,
  };
}
