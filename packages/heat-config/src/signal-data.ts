// What a finished hook signals, by 55-heat-config's rules, plus the two endings it never had:
// a timeout and a hook that could not start.
import { constants } from 'node:os';
import { sendableSignal } from '@hearth/agent-kit/signal-sendable';
import type { HookResult } from './run-hook.ts';

/** A signal body: the hook's JSON object, or deploy_stdout/deploy_stderr/deploy_status_code. */
export type SignalData = Record<string, unknown>;

/** deploy_status_code of a hook killed for passing its timeout (GNU timeout's code). */
export const TIMED_OUT_STATUS = 124;
/** deploy_status_code of a hook that could not be started (the shell's "cannot execute"). */
export const NOT_STARTED_STATUS = 126;
/** deploy_status_code of a hook that exited 0 but wrote more on stdout than heat-config keeps: its result is unreadable. */
export const OUTPUT_CUT_STATUS = 1;
/** deploy_status_code reported for an interrupted hook when the policy is to report it failed. */
export const INTERRUPTED_STATUS = 1;
/** Deepest nesting hearth-server takes in a signal body (its MAX_BODY_DEPTH): the body is level 0, its values 1. */
export { MAX_SIGNAL_DEPTH } from '@hearth/agent-kit/signal-sendable';

/** The hook's return code as Python's subprocess gives it: the exit code, or minus the signal number. */
export function returnCode(result: Pick<HookResult, 'exitCode' | 'signal'>): number {
  if (result.exitCode !== null) return result.exitCode;
  const signal = result.signal === null ? undefined : constants.signals[result.signal as NodeJS.Signals];
  return signal === undefined ? 1 : -signal;
}

function failure(stdout: string, stderr: string, status: number): SignalData {
  return { deploy_stdout: stdout, deploy_stderr: stderr, deploy_status_code: status };
}

/** `text` ending in a newline (unless empty) followed by `line`. */
function appendLine(text: string, line: string): string {
  return `${text}${text === '' || text.endsWith('\n') ? '' : '\n'}${line}\n`;
}

/**
 * The hook's JSON object as hearth-server takes it (see sendableSignal): a value it would refuse (nested deeper
 * than MAX_SIGNAL_DEPTH, a number past JSON's range, a `__proto__`/`constructor.prototype` key, a non-text
 * deploy_stdout/deploy_stderr) is sent as its JSON text, a top-level `__proto__` left out, and the end of
 * deploy_stderr says which and why. A result nested some thousands deep could otherwise not even be saved (the
 * hook ran again on every run).
 */
function sendable(parsed: SignalData): SignalData {
  return sendableSignal(parsed, 'heat-config').data;
}

/**
 * The signal for a hook result. As 55-heat-config: non-empty stdout that parses as JSON is the signal
 * (whatever the exit code); other non-empty stdout, or empty stdout with a non-zero code, gives the three
 * deploy_* keys; empty stdout and code 0 gives {}. Differences: stdout JSON that is not an object counts
 * as non-JSON (a signal is an object), and a value hearth-server would refuse is sent as JSON text (see
 * sendable); a timeout, a hook that did not start, or a stdout too long to keep whole (see OutputTail) is
 * always a failure whose deploy_stderr says so.
 */
export function signalDataFor(result: HookResult): SignalData {
  if (result.startError !== undefined) return failure(result.stdout, appendLine(result.stderr, result.startError), NOT_STARTED_STATUS);
  if (result.timedOut) {
    const line = `heat-config: ${result.command} timed out after ${result.timeoutMs / 1000} s and was killed with its process tree`;
    return failure(result.stdout, appendLine(result.stderr, line), TIMED_OUT_STATUS);
  }
  const code = returnCode(result);
  if (result.stdoutDroppedBytes > 0) {
    // Only the end of stdout was kept: a JSON result is cut, and its deploy_status_code with it. Never report
    // success for a result nobody could read.
    const line = `heat-config: ${result.command} wrote more on stdout than heat-config keeps, so its result could not be read`;
    return failure(result.stdout, appendLine(result.stderr, line), code !== 0 ? code : OUTPUT_CUT_STATUS);
  }
  if (result.stdout !== '') {
    try {
      const parsed: unknown = JSON.parse(result.stdout);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return sendable(parsed as SignalData);
    } catch {
      // Not JSON: reported as text below, as the original does.
    }
    return failure(result.stdout, result.stderr, code);
  }
  return code === 0 ? {} : failure(result.stdout, result.stderr, code);
}

/** The signal for a deployment whose hook was running when the agent or the VM stopped, when it is not run again. */
export function interruptedSignalData(hookPath: string): SignalData {
  return failure(
    '',
    `heat-config: ${hookPath} was interrupted (the agent or the machine stopped while it ran) and was not run again ` +
      `(HEAT_CONFIG_INTERRUPTED=fail); create a new deployment to run it again\n`,
    INTERRUPTED_STATUS,
  );
}
