import type { DeploymentSignal, StoredOutput } from '@hearth/protocol';
import { storableText } from './text.ts';

/** What a signal does to a deployment. */
export interface SignalOutcome {
  status: 'COMPLETE' | 'FAILED';
  reason: string;
  /** Output values after the signal (previous values merged). */
  outputValues: Record<string, unknown>;
}

/** True when a value counts as "has a value" for an error output (not null, not empty). */
function hasValue(value: unknown): boolean {
  return value !== null && value !== undefined && value !== '';
}

/**
 * Applies Heat's rules (reference/server.md §4.3) for a signal: a non-zero `deploy_status_code`
 * fails; a declared `error_output` fails when it has a value (Heat fails on mere presence, even
 * for an empty value, which contradicts its own documentation); declared outputs present are
 * stored; `deploy_stdout`, `deploy_stderr`, `deploy_status_code` always; undeclared keys dropped.
 */
export function signalOutcome(signal: DeploymentSignal, outputs: StoredOutput[], previous: Record<string, unknown> | null): SignalOutcome {
  const reasons: string[] = [];
  const code = signal.deploy_status_code;
  if (code !== undefined && code !== null && code !== '' && code !== 0 && String(code) !== '0') {
    reasons.push(`deploy_status_code : Deployment exited with non-zero status code: ${String(code)}`);
  }
  const values: Record<string, unknown> = { ...(previous ?? {}) };
  for (const output of outputs) {
    if (!Object.hasOwn(signal, output.name)) continue;
    const value = signal[output.name];
    values[output.name] = value;
    if (output.error_output && hasValue(value))
      reasons.push(`${output.name} : ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  }
  values.deploy_stdout = signal.deploy_stdout ?? null;
  values.deploy_stderr = signal.deploy_stderr ?? null;
  values.deploy_status_code = signal.deploy_status_code ?? null;
  return reasons.length > 0
    ? { status: 'FAILED', reason: storableText(reasons.join(', ')), outputValues: values }
    : { status: 'COMPLETE', reason: 'Outputs received', outputValues: values };
}
