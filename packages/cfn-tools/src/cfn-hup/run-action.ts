// Runs a hook's action through /bin/sh as its `runas` user with a real uid AND gid switch (the original only
// set the euid, so the action could set it back to root): spawn's uid/gid options after looking the user up.
// Unlike the original, an action cannot stall cfn-hup for ever: it is stopped after a timeout or when cfn-hup
// stops, and a background process it leaves holding stdout/stderr (`service x restart` that forks a daemon) does
// not keep cfn-hup waiting for that process to end.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { setLongTimeout } from '@hearth/agent-kit/long-timer';
import { stopProcessTree } from '@hearth/agent-kit/process-tree';

/** Wait between SIGTERM and SIGKILL when an action is stopped. */
const KILL_GRACE_MS = 5000;
/** Default wait, after the shell exited, for the output pipes to close. */
const OUTPUT_GRACE_MS = 1000;

/** A user's ids and home, as getent gives them. */
export interface UserEntry {
  name: string;
  uid: number;
  gid: number;
  home: string;
}

/** Looks a user up by name or numeric uid (getent passwd: NSS included); undefined when unknown. */
export function lookupUser(user: string): UserEntry | undefined {
  const result = spawnSync('getent', ['passwd', user], { encoding: 'utf8' });
  if (result.status !== 0) return undefined;
  const fields = result.stdout.split('\n')[0]!.split(':');
  if (fields.length < 7) return undefined;
  return { name: fields[0]!, uid: Number(fields[2]), gid: Number(fields[3]), home: fields[5]! };
}

/** How an action ended: the same fields on success and failure. */
export interface ActionResult {
  command: string;
  user: string | undefined;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** Whether it was stopped because timeoutMs ran out. */
  timedOut: boolean;
  /** Whether it was stopped because the signal aborted (cfn-hup stopping). */
  aborted: boolean;
  /** Non-zero exit, a signal, a timeout, or it could not start. */
  failed: boolean;
}

/** Options of runAction. */
export interface RunActionOptions {
  /** Environment of the action (HOME, USER and LOGNAME follow runas). Default process.env. */
  env?: NodeJS.ProcessEnv | undefined;
  /**
   * Stop the action (SIGTERM to it and every process below it, SIGKILL 5 s later to what is left) after this many ms;
   * the result comes once they are gone. Default: no limit.
   */
  timeoutMs?: number | undefined;
  /** Stop the action the same way when this aborts. Default none. */
  signal?: AbortSignal | undefined;
  /** How long to wait, once the shell exited, for a background process it started to release stdout/stderr. Default 1000. */
  outputGraceMs?: number | undefined;
}

/** Runs `action` with `/bin/sh -c`; `runas` switches uid, gid (and drops supplementary groups), HOME, USER, LOGNAME. */
export async function runAction(action: string, runas: string | undefined, options: RunActionOptions = {}): Promise<ActionResult> {
  const started = performance.now();
  const done = (partial: Omit<ActionResult, 'command' | 'user' | 'durationMs' | 'timedOut' | 'aborted'>): ActionResult => ({
    command: action,
    user: runas,
    durationMs: performance.now() - started,
    timedOut: false,
    aborted: false,
    ...partial,
  });
  let identity: { uid: number; gid: number } | undefined;
  let childEnv: NodeJS.ProcessEnv = { ...(options.env ?? process.env) };
  if (runas !== undefined) {
    const user = lookupUser(runas);
    if (!user)
      return done({
        exitCode: null,
        signal: null,
        stdout: '',
        stderr: `no such user '${runas}' (getent passwd ${runas} found nothing)`,
        failed: true,
      });
    const self = process.getuid?.();
    if (self !== user.uid || process.getgid?.() !== user.gid) identity = { uid: user.uid, gid: user.gid };
    childEnv = { ...childEnv, HOME: user.home, USER: user.name, LOGNAME: user.name };
  }
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', action], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], cwd: '/', ...identity });
  } catch (error) {
    return done({ exitCode: null, signal: null, stdout: '', stderr: `cannot run as ${runas}: ${(error as Error).message}`, failed: true });
  }
  return new Promise((resolve) => settle(child, options, resolve, done));
}

/** Collects the child's output and resolves once it ended (or was stopped), without waiting on a background process. */
function settle(
  child: ChildProcess,
  options: RunActionOptions,
  resolve: (result: ActionResult) => void,
  done: (partial: Omit<ActionResult, 'command' | 'user' | 'durationMs' | 'timedOut' | 'aborted'>) => ActionResult,
): void {
  let stdout = '';
  let stderr = '';
  let capturing = true;
  let stoppedBy: 'timeout' | 'abort' | undefined;
  let stopping: Promise<void> | undefined;
  let outputTimer: NodeJS.Timeout | undefined;
  let finished = false;
  const stop = (reason: 'timeout' | 'abort'): void => {
    if (stoppedBy !== undefined || child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
    stoppedBy = reason;
    // Not cancelled when the shell exits: a process below it that ignores SIGTERM still gets the SIGKILL, and the
    // result waits for that, so that cfn-hup cannot exit (-f, or stopping) and leave such a process running.
    stopping = stopProcessTree(child.pid, { graceMs: KILL_GRACE_MS }).catch(() => undefined);
  };
  const cancelTimeout = options.timeoutMs === undefined ? undefined : setLongTimeout(() => stop('timeout'), options.timeoutMs);
  const onAbort = (): void => stop('abort');
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  const finish = (exitCode: number | null, signal: NodeJS.Signals | null, note = ''): void => {
    if (finished) return;
    finished = true;
    capturing = false;
    cancelTimeout?.();
    clearTimeout(outputTimer);
    options.signal?.removeEventListener('abort', onAbort);
    const why =
      stoppedBy === 'timeout'
        ? `stopped after the ${Math.round((options.timeoutMs ?? 0) / 1000)} s timeout\n`
        : stoppedBy === 'abort'
          ? 'stopped: cfn-hup is shutting down\n'
          : '';
    const result = {
      ...done({ exitCode, signal, stdout, stderr: `${stderr}${note}${why}`, failed: exitCode !== 0 || stoppedBy !== undefined }),
      timedOut: stoppedBy === 'timeout',
      aborted: stoppedBy === 'abort',
    };
    if (stopping === undefined) resolve(result);
    else void stopping.then(() => resolve(result));
  };
  // Past the resolve, keep draining (and dropping) what a background process writes, so it never blocks on a full pipe.
  child.stdout?.on('data', (chunk: Buffer) => {
    if (capturing) stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    if (capturing) stderr += chunk.toString();
  });
  child.on('error', (error) => finish(null, null, `${error.message}\n`));
  child.on('close', (exitCode, signal) => finish(exitCode, signal));
  child.on('exit', (exitCode, signal) => {
    outputTimer = setTimeout(() => {
      // The shell is gone but its output pipes are still open: a process it started in the background holds them.
      for (const stream of [child.stdout, child.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
      finish(exitCode, signal, 'output after the action exited is not captured: a background process it started holds stdout/stderr\n');
    }, options.outputGraceMs ?? OUTPUT_GRACE_MS);
  });
}
