// Runs one hook: deployment JSON on stdin, stdout/stderr captured, progress lines read from fd 3,
// and a timeout after which the hook's whole process tree is stopped (SIGTERM, then SIGKILL).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { setLongTimeout } from '@hearth/agent-kit/long-timer';
import { signalProcessTree, stopProcessTree } from '@hearth/agent-kit/process-tree';
import { DEFAULT_MAX_OUTPUT_BYTES, OutputTail } from './output-tail.ts';

/** The env var telling a hook that file descriptor 3 takes progress lines. */
export const PROGRESS_FD_ENV = 'HEAT_CONFIG_PROGRESS_FD';

/** Process-group leaders of the hooks running now, so a signal to heat-config can stop them. */
const running = new Set<number>();

let stopping = false;

/** Sends `signal` to every running hook's process tree: heat-config is being stopped (see isStopping). */
export function signalRunningHooks(signal: NodeJS.Signals): void {
  stopping = true;
  for (const leader of running) signalProcessTree(leader, signal, { group: true });
}

/** Whether heat-config is being stopped: a hook that ended now was killed by us, and its result is not its own. */
export function isStopping(): boolean {
  return stopping;
}

/** Options of runHook. */
export interface RunHookOptions {
  /** Written to the hook's stdin (the deployment JSON). */
  input: string;
  /** Stop the hook (and everything it started) after this many ms (any length: a timer of agent-kit/long-timer). */
  timeoutMs: number;
  /** Wait between SIGTERM and SIGKILL, in ms. Default 10000. */
  killGraceMs?: number;
  /** After the hook exits, how long to wait for processes it left behind to close stdout/stderr, in ms. Default 2000. */
  outputGraceMs?: number;
  /** Bytes kept of stdout, and of stderr: the last ones (see OutputTail). Default DEFAULT_MAX_OUTPUT_BYTES (16 MiB). */
  maxOutputBytes?: number;
  /** Environment of the hook. Default process.env (plus PROGRESS_FD_ENV). */
  env?: NodeJS.ProcessEnv;
  /** Called with each non-empty line the hook writes to fd 3. */
  onProgress?: (line: string) => void;
  /** Called with the hook's pid once it is started (not when it could not be). */
  onSpawn?: (pid: number) => void;
}

/** How a hook ended; the same fields whatever happened. */
export interface HookResult {
  /** The hook's path. */
  command: string;
  /** Exit code, or null when it did not exit by itself (signal, timeout, never started). */
  exitCode: number | null;
  /** The signal that ended it, or null. */
  signal: string | null;
  /** stdout, decoded as UTF-8 (invalid bytes become U+FFFD); only its end, behind a line saying so, past maxOutputBytes. */
  stdout: string;
  /** stderr, decoded the same way. */
  stderr: string;
  /** Wall time, in ms. */
  durationMs: number;
  /** Whether the timeout ran out and the tree was stopped. */
  timedOut: boolean;
  /** The timeout it ran with, in ms. */
  timeoutMs: number;
  /** Bytes of stdout dropped from the front (it wrote more than maxOutputBytes): its JSON result, if any, is cut. */
  stdoutDroppedBytes: number;
  /** Why it could not be started (e.g. `EACCES`), when it could not. */
  startError?: string;
}

function collect(stream: Readable | null, tail: OutputTail): Promise<void> {
  return new Promise((resolve) => {
    if (stream === null) return resolve();
    stream.on('data', (chunk: Buffer) => tail.push(chunk));
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
}

/** Runs `hookPath` with no arguments; never throws for anything the hook does. */
export async function runHook(hookPath: string, options: RunHookOptions): Promise<HookResult> {
  const started = performance.now();
  const env = { ...(options.env ?? process.env), [PROGRESS_FD_ENV]: '3' };
  // A group leader of its own, so a timeout can stop everything it started.
  const child = spawn(hookPath, [], { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], detached: true, env });
  if (child.pid !== undefined) running.add(child.pid);
  if (child.pid !== undefined) options.onSpawn?.(child.pid);
  const stdout = new OutputTail(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
  const stderr = new OutputTail(options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES);
  const outputs = [collect(child.stdout, stdout), collect(child.stderr, stderr)];
  const progress = child.stdio[3] as Readable | null;
  if (progress !== null) {
    progress.on('error', () => undefined);
    const lines = createInterface({ input: progress, crlfDelay: Infinity });
    lines.on('line', (line) => {
      const text = line.trim();
      if (text !== '') options.onProgress?.(text);
    });
  }
  child.stdin.on('error', () => undefined); // A hook that does not read stdin closes it early (EPIPE).
  child.stdin.end(options.input);

  let timedOut = false;
  let stopped: Promise<void> | undefined;
  const cancelTimeout = setLongTimeout(() => {
    if (child.pid === undefined) return;
    timedOut = true;
    // The group reaches a daemon re-parented to init; the tree, what left the group (setsid) while still below the hook.
    stopped = stopProcessTree(child.pid, { graceMs: options.killGraceMs ?? 10_000, group: true });
  }, options.timeoutMs);
  const ended = await new Promise<{ code: number | null; signal: string | null; error?: string }>((resolve) => {
    child.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ code: null, signal: null, error: `${error.code ?? ''} ${error.message}`.trim() }),
    );
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  cancelTimeout();
  await stopped;
  if (child.pid !== undefined) running.delete(child.pid);
  // Something the hook left running may hold stdout open: take what came within the grace, then stop reading.
  let graceTimer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all(outputs), new Promise((resolve) => (graceTimer = setTimeout(resolve, options.outputGraceMs ?? 2000)))]);
  clearTimeout(graceTimer);
  for (const stream of [child.stdout, child.stderr, progress]) stream?.destroy();
  return {
    command: hookPath,
    exitCode: ended.code,
    signal: ended.signal,
    stdout: stdout.text('stdout'),
    stderr: stderr.text('stderr'),
    durationMs: Math.round(performance.now() - started),
    timedOut,
    timeoutMs: options.timeoutMs,
    stdoutDroppedBytes: stdout.dropped,
    ...(ended.error === undefined ? {} : { startError: `heat-config: could not start ${hookPath}: ${ended.error}` }),
  };
}
