// Runs one script the way bash runs `$dir/$name` inside dib-run-parts: stdio inherited, exit
// status as bash 5 reports it (128+signal for a killed script, 127 when it or its interpreter is missing, 126 when it cannot run), and a
// file without a shebang run by bash, as bash itself does on ENOEXEC.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import type { ChildTracker } from './child-processes.ts';

/** How one script ended. */
export interface ScriptExit {
  /** Exit status as bash would report it: the script's code, 128+N for signal N, 127 missing (or its interpreter), 126 cannot run. */
  exitCode: number;
  /** The signal that killed it, or null. */
  signal: NodeJS.Signals | null;
}

/** What `execScript` needs besides the path. */
export interface ExecScriptOptions {
  /** Environment of the script. */
  env: NodeJS.ProcessEnv;
  /** Working directory. Default: ours. */
  cwd?: string;
  /** Registers the child for `--timeout`. Default none. */
  tracker?: ChildTracker;
  /** Where a start failure is described (bash's own message). Default process.stderr. */
  stderr?: NodeJS.WritableStream;
}

function spawnAndWait(command: string, args: string[], options: ExecScriptOptions): Promise<ScriptExit | NodeJS.ErrnoException> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { env: options.env, cwd: options.cwd, stdio: 'inherit' });
    if (child.pid !== undefined) options.tracker?.add(child.pid);
    child.once('error', (error) => resolve(error));
    child.once('exit', (code, signal) => {
      if (child.pid !== undefined) options.tracker?.forget(child.pid);
      const number = signal === null ? 0 : (constants.signals[signal] ?? 0);
      resolve({ exitCode: signal === null ? (code ?? 0) : 128 + number, signal });
    });
  });
}

/**
 * Whether `path` should be started through bash's `exec`: anything that does not start with `#!` or
 * the ELF magic. Bash runs text without a shebang as a bash script and refuses other binaries with
 * 126; left to libc's execvp, such a file would be handed to /bin/sh instead.
 */
export function needsBashExec(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(4);
    const magic = head.subarray(0, readSync(fd, head, 0, 4, 0)).toString('latin1');
    return !magic.startsWith('#!') && magic !== '\x7fELF';
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Runs `path` with no arguments and waits for it. Never rejects: a script that cannot start is exit 127 (it or its `#!` interpreter is missing) or 126, as in bash 5. */
export async function execScript(path: string, options: ExecScriptOptions): Promise<ScriptExit> {
  const outcome = needsBashExec(path)
    ? await spawnAndWait('bash', ['-c', 'exec "$0"', path], options)
    : await spawnAndWait(path, [], options);
  if (!(outcome instanceof Error)) return outcome;
  const reason = outcome.code === 'ENOENT' && existsSync(path) ? 'cannot execute: required file not found' : outcome.message;
  (options.stderr ?? process.stderr).write(`dib-run-parts: ${path}: ${reason}\n`);
  return { exitCode: outcome.code === 'ENOENT' ? 127 : 126, signal: null };
}
