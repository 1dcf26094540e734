import { existsSync } from 'node:fs';
import type { Options as ExecaOptions } from 'execa';
import { setLongTimeout } from './long-timer.ts';
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
   * After this many ms send SIGTERM to the child and every process below it, and SIGKILL to those still
   * there `killGraceMs` later (as os-refresh-config's --timeout does). Default: no limit.
   */
  timeoutMs?: number;
  /** Wait between SIGTERM and SIGKILL after a timeout, in ms. Default 5000. */
  killGraceMs?: number;
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

/** True when this process has a file descriptor 3 open. */
function hasFd3(): boolean {
  return existsSync('/proc/self/fd/3');
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
  /** Everything it wrote to stdout, untrimmed ('' with inheritOutput). */
  stdout: string;
  /** Everything it wrote to stderr, untrimmed, followed by a line saying why when it did not exit by itself. */
  stderr: string;
  /** Wall time from spawn to end, in ms. */
  durationMs: number;
  /** Whether timeoutMs ran out. */
  timedOut: boolean;
  /** Whether it did not exit 0 (non-zero exit, signal, timeout, or could not start). */
  failed: boolean;
}

/** What to add to stderr when the child did not end with an exit code of its own. */
function failureReason(
  result: { timedOut: boolean; signal?: string | undefined; exitCode?: number | undefined; originalMessage?: string; code?: string },
  cwd: string,
  timeoutMs: number | undefined,
): string | undefined {
  if (result.timedOut && result.signal !== undefined) return `timed out after ${timeoutMs} ms and was killed with ${result.signal}`;
  if (result.timedOut) return `timed out after ${timeoutMs} ms and exited with code ${result.exitCode} after SIGTERM`;
  if (result.exitCode !== undefined) return undefined;
  if (result.signal !== undefined) return `killed by ${result.signal}`;
  if (result.code === 'ENOENT' && !existsSync(cwd)) return `could not start: working directory ${cwd} does not exist`;
  if (result.code === 'ENOENT') return `could not start: executable not found (${result.originalMessage ?? 'ENOENT'})`;
  return `could not start: ${result.originalMessage ?? result.code ?? 'unknown error'}`;
}

/**
 * Runs a command and reports how it ended. Never throws for a non-zero exit, a timeout or a missing
 * executable: those come back with failed=true (and exitCode null unless the child exited itself).
 * execa is loaded on first use, so agents that never spawn do not pay for it.
 */
export async function runProcess(command: string, args: string[], options: RunProcessOptions = {}): Promise<ProcessResult> {
  const cwd = options.cwd ?? process.cwd();
  // No argument, variable or path can hold a NUL (execve takes C strings); execa would throw a TypeError.
  const withNul = [command, ...args, cwd, ...Object.values(options.env ?? {})].some((text) => text?.includes('\0'));
  if (withNul) {
    const shown = [command, ...args].map((text) => text.replaceAll('\0', '\\0')).join(' ');
    return {
      command: shown,
      cwd,
      exitCode: null,
      signal: null,
      stdout: '',
      stderr: `${shown}: could not start: an argument, environment variable or the working directory contains a NUL byte\n`,
      durationMs: 0,
      timedOut: false,
      failed: true,
    };
  }
  const { execa } = await import('execa');
  const output = options.inheritOutput ? 'inherit' : 'pipe';
  const execaOptions = {
    cwd,
    env: options.env,
    extendEnv: options.extendEnv ?? true,
    shell: options.shell ?? false,
    reject: false,
    stripFinalNewline: false,
    encoding: 'utf8',
    stdio: [
      options.input === undefined ? 'ignore' : 'pipe',
      output,
      output,
      ...(options.inheritFd3 === true && hasFd3() ? (['inherit'] as const) : []),
    ],
    ...(options.input === undefined ? {} : { input: options.input }),
  } satisfies ExecaOptions;
  const subprocess = execa(command, args, execaOptions);
  let timedOut = false;
  const cancelTimeout =
    options.timeoutMs === undefined
      ? undefined
      : setLongTimeout(() => {
          if (subprocess.pid === undefined) return;
          timedOut = true;
          // A grandchild holding stdout open would keep us waiting long after the child died: stop them all. Not
          // awaited, and not cancelled when the child ends: one that ignores SIGTERM still gets the SIGKILL.
          void stopProcessTree(subprocess.pid, { graceMs: options.killGraceMs ?? 5000 });
        }, options.timeoutMs);
  const finished = await subprocess;
  cancelTimeout?.();
  const result = { ...finished, timedOut };
  const reason = failureReason(result, cwd, options.timeoutMs);
  const stderr = typeof result.stderr === 'string' ? result.stderr : '';
  return {
    command: result.escapedCommand,
    cwd: result.cwd,
    exitCode: result.exitCode ?? null,
    signal: result.signal ?? null,
    stdout: typeof result.stdout === 'string' ? result.stdout : '',
    stderr:
      reason === undefined ? stderr : `${stderr}${stderr === '' || stderr.endsWith('\n') ? '' : '\n'}${result.escapedCommand}: ${reason}\n`,
    durationMs: Math.round(result.durationMs),
    timedOut,
    failed: result.failed || timedOut,
  };
}
