import { runProcess, type Logger, type ProcessResult, type RunProcessOptions } from '@hearth/agent-kit';

/** Options of runTool: runProcess's, plus the logger that records the command and how it ended. */
export interface RunToolOptions extends RunProcessOptions {
  /** Where the command line and outcome are logged (debug / info). Default: not logged. */
  log?: Logger;
}

/**
 * Runs the hook's tool with agent-kit's runProcess (stdout/stderr captured, never throws for a failure or a
 * missing executable) and logs the outcome. The environment extends the hook's own unless extendEnv is false.
 * heat-config's progress channel (fd 3, `HEAT_CONFIG_PROGRESS_FD`) is handed on, so a tool's progress
 * lines become heartbeats.
 */
export async function runTool(command: string, args: string[], options: RunToolOptions = {}): Promise<ProcessResult> {
  const { log, ...processOptions } = options;
  log?.debug('running tool', { command, args, cwd: processOptions.cwd });
  const result = await runProcess(command, args, { inheritFd3: true, ...processOptions });
  log?.info('tool finished', { command: result.command, exitCode: result.exitCode, signal: result.signal, durationMs: result.durationMs });
  return result;
}
