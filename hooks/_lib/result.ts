import { constants } from 'node:os';
import type { ProcessResult } from '@hearth/agent-kit';

/** What a hook prints on stdout: the three deploy_* keys plus one key per output it found. */
export interface HookResult {
  /** The tool's stdout. */
  deploy_stdout: string;
  /** The tool's stderr (and the hook's own reason when it could not run the tool). */
  deploy_stderr: string;
  /** 0 for success; anything else marks the deployment FAILED. */
  deploy_status_code: number;
  /** Declared outputs by name. */
  [output: string]: unknown;
}

/**
 * Longest deploy_stdout / deploy_stderr a hook prints, in characters: 1 Mi, the end kept. heat-config reads at
 * most 16 MiB of a hook's stdout (a longer result cannot be parsed and fails the deployment), and a signal holds
 * 1 MiB in all, so a tool that talks without end must not push the result past what heat-config keeps.
 */
export const MAX_OUTPUT_CHARS = 1024 * 1024;

/**
 * `text` when it fits MAX_OUTPUT_CHARS and nothing was cut before it, else its end behind a line saying how much was
 * cut (`cutBefore`: characters already dropped from the front by runTool).
 */
export function keepEnd(text: string, stream: 'stdout' | 'stderr', cutBefore = 0): string {
  if (text.length <= MAX_OUTPUT_CHARS && cutBefore === 0) return text;
  const cut = Math.max(0, text.length - MAX_OUTPUT_CHARS);
  return `[hook: the first ${cutBefore + cut} characters of the tool's ${stream} were cut]\n${text.slice(cut)}`;
}

/** What hookResult reports of a run; `*CutChars` are characters runTool already dropped from the front. */
export interface RunOutcome {
  stdout: string;
  stderr: string;
  status: number;
  stdoutCutChars?: number;
  stderrCutChars?: number;
}

/** The result for `outputs` and a run: outputs first, then the deploy_* keys, which win over an output of the same name. */
export function hookResult(run: RunOutcome, outputs: Record<string, unknown> = {}): HookResult {
  return {
    ...outputs,
    deploy_stdout: keepEnd(run.stdout, 'stdout', run.stdoutCutChars),
    deploy_stderr: keepEnd(run.stderr, 'stderr', run.stderrCutChars),
    deploy_status_code: run.status,
  };
}

/** A failed result whose stderr says why: for a hook that could not run its tool at all. */
export function failedResult(message: string, status = 1): HookResult {
  return hookResult({ stdout: '', stderr: message.endsWith('\n') ? message : `${message}\n`, status });
}

/**
 * The deploy_status_code for a finished process: its exit code; 128 + signal number when a signal ended it
 * (as a shell reports it); 124 when it outran its timeout yet exited 0; 1 when it never started.
 */
export function statusCode(result: ProcessResult): number {
  if (result.exitCode !== null) return result.timedOut && result.exitCode === 0 ? 124 : result.exitCode;
  if (result.signal !== null) return 128 + (constants.signals[result.signal as NodeJS.Signals] ?? 0);
  return 1;
}

/** The result of a tool run: its stdout, stderr and status code, plus `outputs`. */
export function toolResult(
  result: ProcessResult & Pick<RunOutcome, 'stdoutCutChars' | 'stderrCutChars'>,
  outputs: Record<string, unknown> = {},
): HookResult {
  const { stdout, stderr, stdoutCutChars, stderrCutChars } = result;
  return hookResult({ stdout, stderr, status: statusCode(result), stdoutCutChars, stderrCutChars }, outputs);
}

/** The result as the single JSON line a hook prints. */
export function formatResult(result: HookResult): string {
  return JSON.stringify(result) + '\n';
}
