// Runs a hook's tool through agent-kit's runProcess: stdout/stderr captured (their last 16 MiB), and done when the
// tool exits, not when every process it left behind has closed them (a script that starts `daemon &` would hold
// its deployment until the hook timeout, which then killed the daemon too). What is the hook's own: a stop signal
// the hook receives is passed on to the tool only if the tool does not stop by itself, and no tool starts after.
import { runProcess, type Logger, type RunProcessResult } from '@hearth/agent-kit';

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
export type ToolResult = RunProcessResult;

/**
 * Runs the hook's tool with stdin from /dev/null, the hook's environment plus `env`, and heat-config's progress
 * channel (fd 3, `HEAT_CONFIG_PROGRESS_FD`) handed on, so a tool's progress lines become heartbeats. Never
 * throws for a failure or a missing executable. When the tool did not exit by itself, the last line of stderr
 * says why.
 */
export async function runTool(command: string, args: string[], options: RunToolOptions = {}): Promise<ToolResult> {
  const { log } = options;
  log?.debug('running tool', { command, args, cwd: options.cwd ?? process.cwd() });
  const passedOn = new AbortController();
  // A unit stopping (or heat-config stopping its hook) signals every process: were the hook to die at once, the
  // tool would write its last words (a trap's cleanup) into closed pipes and die of SIGPIPE. So the hook waits
  // for the tool, which most likely got the signal too, and passes it on only if the tool is still there later.
  let passOn: NodeJS.Timeout | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    stopping = signal;
    log?.warn('signal received: waiting for the tool to stop', { signal, command });
    passOn ??= setTimeout(() => {
      log?.warn('the tool is still running: passing the signal on to it', { signal, command });
      passedOn.abort();
    }, options.signalGraceMs ?? 2000);
  };
  if (stopping === undefined) for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
  let result: ToolResult;
  try {
    result = await runProcess(command, args, {
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      ...(options.env === undefined ? {} : { env: options.env }),
      inheritFd3: true,
      killGraceMs: 5000,
      ...(options.outputGraceMs === undefined ? {} : { outputGraceMs: options.outputGraceMs }),
      stop: stopping === undefined ? passedOn.signal : AbortSignal.abort(`the hook received ${stopping}`),
    });
  } finally {
    for (const signal of STOP_SIGNALS) process.off(signal, onSignal);
    clearTimeout(passOn);
  }
  log?.info('tool finished', { command: result.command, exitCode: result.exitCode, signal: result.signal, durationMs: result.durationMs });
  return result;
}
