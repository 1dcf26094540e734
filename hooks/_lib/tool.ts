// Runs a hook's tool: stdout/stderr captured (their last 16 MiB), and done when the tool exits, not when every
// process it left behind has closed them (a script that starts `daemon &` would hold its deployment until the
// hook timeout, which then killed the daemon too).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { stopProcessTree, type Logger, type ProcessResult } from '@hearth/agent-kit';
import { ToolOutputTail } from './tool-output.ts';

/** Options of runTool. */
export interface RunToolOptions {
  /** Working directory. Default the hook's. */
  cwd?: string;
  /** Variables added to the hook's environment. Default none. */
  env?: NodeJS.ProcessEnv;
  /** Where the command line and outcome are logged (debug / info). Default: not logged. */
  log?: Logger;
  /** After the tool exits, how long to wait for processes it left behind to close stdout/stderr, in ms. Default 2000. */
  outputGraceMs?: number;
  /** After a SIGTERM, SIGINT or SIGHUP, how long to wait for the tool to stop by itself before passing it on, in ms. Default 2000. */
  signalGraceMs?: number;
}

/** Signals that would end the hook (and close the tool's stdout/stderr under it) while the tool runs. */
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/** The stop signal this hook received while a tool ran: no further tool is started once it is set. */
let stopping: NodeJS.Signals | undefined;

/** How the tool ended (see ProcessResult), and how much of its output was dropped from the front. */
export interface ToolResult extends ProcessResult {
  /** Characters of stdout dropped before the kept end (TOOL_OUTPUT_KEPT_BYTES); 0 when it is whole. */
  stdoutCutChars: number;
  /** The same for stderr. */
  stderrCutChars: number;
}

const NO_QUOTE = /^[\w./-]+$/;

/** An argument as a POSIX shell reads it back, control characters escaped (as execa's escapedCommand). */
function quote(arg: string): string {
  if (NO_QUOTE.test(arg)) return arg;
  // eslint-disable-next-line no-control-regex -- control characters are what is escaped
  const escaped = arg.replace(/[\u0000-\u001f\u007f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `'${escaped.replaceAll("'", "'\\''")}'`;
}

function collect(stream: Readable | null, tail: ToolOutputTail): Promise<void> {
  return new Promise((resolve) => {
    if (stream === null) return resolve();
    stream.on('data', (chunk: Buffer) => tail.push(chunk));
    stream.on('close', resolve);
    stream.on('error', () => resolve());
  });
}

function startError(error: NodeJS.ErrnoException, command: string, cwd: string): string {
  if (error.code === 'ENOENT' && !existsSync(cwd)) return `could not start: working directory ${cwd} does not exist`;
  if (error.code === 'ENOENT') return `could not start: executable not found (spawn ${command} ENOENT)`;
  return `could not start: ${error.message}`;
}

/**
 * Runs the hook's tool with stdin from /dev/null, the hook's environment plus `env`, and heat-config's progress
 * channel (fd 3, `HEAT_CONFIG_PROGRESS_FD`) handed on, so a tool's progress lines become heartbeats. Never
 * throws for a failure or a missing executable. When the tool did not exit by itself, the last line of stderr
 * says why.
 */
export async function runTool(command: string, args: string[], options: RunToolOptions = {}): Promise<ToolResult> {
  const { log } = options;
  const cwd = options.cwd ?? process.cwd();
  const shown = [command, ...args].map(quote).join(' ');
  log?.debug('running tool', { command, args, cwd });
  const started = performance.now();
  const stdout = new ToolOutputTail();
  const stderr = new ToolOutputTail();
  let streams: Array<Readable | null> = [];
  const ended = await new Promise<{ code: number | null; signal: string | null; reason?: string; read: Promise<void>[] }>((resolve) => {
    if (stopping !== undefined)
      return resolve({ code: null, signal: null, reason: `not started: the hook received ${stopping}`, read: [] });
    // No argument, variable or path can hold a NUL (execve takes C strings); spawn would throw, naming the value.
    if ([command, ...args, cwd, ...Object.values(options.env ?? {})].some((text) => text?.includes('\0'))) {
      const reason = 'could not start: an argument, environment variable or the working directory contains a NUL byte';
      return resolve({ code: null, signal: null, reason, read: [] });
    }
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe', ...(existsSync('/proc/self/fd/3') ? [3] : [])],
    });
    streams = [child.stdout, child.stderr];
    const read = [collect(child.stdout, stdout), collect(child.stderr, stderr)];
    // A unit stopping (or heat-config stopping its hook) signals every process: were the hook to die at once, the
    // tool would write its last words (a trap's cleanup) into closed pipes and die of SIGPIPE. So the hook waits
    // for the tool, which most likely got the signal too, and passes it on only if the tool is still there later.
    let passOn: NodeJS.Timeout | undefined;
    const onSignal = (signal: NodeJS.Signals): void => {
      stopping = signal;
      log?.warn('signal received: waiting for the tool to stop', { signal, command: shown });
      passOn ??= setTimeout(() => {
        log?.warn('the tool is still running: passing the signal on to it', { signal, command: shown });
        if (child.pid !== undefined) void stopProcessTree(child.pid, { graceMs: 5000 });
      }, options.signalGraceMs ?? 2000);
    };
    for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
    const done = (outcome: { code: number | null; signal: string | null; reason?: string; read: Promise<void>[] }): void => {
      for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
      clearTimeout(passOn);
      resolve(outcome);
    };
    child.on('error', (error) => done({ code: null, signal: null, reason: startError(error, command, cwd), read }));
    child.on('exit', (code, signal) => done({ code, signal, ...(signal === null ? {} : { reason: `killed by ${signal}` }), read }));
  });
  // Something the tool left running may hold stdout open: take what came within the grace, then stop reading.
  let graceTimer: NodeJS.Timeout | undefined;
  const grace = new Promise((resolve) => (graceTimer = setTimeout(resolve, options.outputGraceMs ?? 2000)));
  await Promise.race([Promise.all(ended.read), grace]);
  clearTimeout(graceTimer);
  for (const stream of streams) stream?.destroy();
  const out = stdout.result();
  const err = stderr.result();
  const stderrText =
    ended.reason === undefined
      ? err.text
      : `${err.text}${err.text === '' || err.text.endsWith('\n') ? '' : '\n'}${shown}: ${ended.reason}\n`;
  const result: ToolResult = {
    command: shown,
    cwd,
    exitCode: ended.code,
    signal: ended.signal,
    stdout: out.text,
    stderr: stderrText,
    durationMs: Math.round(performance.now() - started),
    timedOut: false,
    failed: ended.code !== 0,
    stdoutCutChars: out.cutChars,
    stderrCutChars: err.cutChars,
  };
  log?.info('tool finished', { command: result.command, exitCode: result.exitCode, signal: result.signal, durationMs: result.durationMs });
  return result;
}
