// Runs one script the way bash runs `$dir/$name` inside dib-run-parts: stdio inherited, exit
// status as bash reports it (128+signal for a killed script, 126/127 when it cannot start), and a
// file without a shebang run by bash, as bash itself does on ENOEXEC.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { constants } from 'node:os';
import type { ChildTracker } from './child-processes.ts';

/** How one script ended. */
export interface ScriptExit {
  /** Exit status as bash would report it: the script's code, 128+N for signal N, 126/127 when it could not start. */
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
 * Whether the kernel cannot exec `path` itself but bash would run it as a script: text without `#!`
 * (bash's ENOEXEC fallback; left to the kernel, libc would hand it to /bin/sh instead).
 */
export function needsBash(path: string): boolean {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const head = Buffer.alloc(80);
    const read = readSync(fd, head, 0, head.length, 0);
    const start = head.subarray(0, read);
    if (start.subarray(0, 2).toString('latin1') === '#!' || start.subarray(0, 4).toString('latin1') === '\x7fELF') return false;
    const firstLine = start.subarray(0, Math.max(0, start.indexOf(10)) || read);
    return !firstLine.includes(0);
  } catch {
    return false;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Runs `path` with no arguments and waits for it. Never rejects: a script that cannot start is exit 126 or 127, as in bash. */
export async function execScript(path: string, options: ExecScriptOptions): Promise<ScriptExit> {
  const outcome = needsBash(path) ? await spawnAndWait('bash', [path], options) : await spawnAndWait(path, [], options);
  if (!(outcome instanceof Error)) return outcome;
  const missing = outcome.code === 'ENOENT' && !existsSync(path);
  const reason = outcome.code === 'ENOENT' && !missing ? 'bad interpreter: No such file or directory' : outcome.message;
  (options.stderr ?? process.stderr).write(`dib-run-parts: ${path}: ${reason}\n`);
  return { exitCode: missing ? 127 : 126, signal: null };
}
