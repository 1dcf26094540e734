// Runs the configured command as the original does (`subprocess.check_call(command, shell=True)`):
// through /bin/sh, with the daemon's own stdin, stdout and stderr (so os-refresh-config's output
// reaches the journal as it happens; agent-kit's runProcess captures output instead) and
// OS_CONFIG_FILES added to the environment.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

/** The outcome of one command run: the same fields whether it succeeded or not. */
export interface CommandResult {
  command: string;
  /** The exit code; 128 + n when killed by signal n; 127 when the shell could not start. */
  exitCode: number;
  signal: string | null;
  startedAt: string;
  durationMs: number;
}

/** Runs `command` with `sh -c` and OS_CONFIG_FILES=`files` joined by `:`; never rejects. */
export function runCommand(command: string, files: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<CommandResult> {
  const startedAt = new Date().toISOString();
  // monotonic: a step of the wall clock (NTP) during the command must not make its duration negative or years long
  const started = performance.now();
  const durationMs = (): number => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], { env: { ...env, OS_CONFIG_FILES: files.join(':') }, stdio: 'inherit' });
    child.once('error', () => resolve({ command, exitCode: 127, signal: null, startedAt, durationMs: durationMs() }));
    child.once('close', (code, signal) => {
      const exitCode = code ?? (signal ? 128 + (constants.signals[signal] ?? 0) : 1);
      resolve({ command, exitCode, signal, startedAt, durationMs: durationMs() });
    });
  });
}
