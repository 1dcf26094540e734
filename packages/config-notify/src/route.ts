// A deployment file -> the transport its signal takes, chosen from its `deploy_*` inputs the way
// heat-config-notify chooses (plus hearth's own HEARTH_SIGNAL, named by deploy_signal_transport).
import { readFileSync } from 'node:fs';
import { ExitError } from '@hearth/agent-kit';
import { EXIT_CONFIG, EXIT_REFUSED } from './exit-codes.ts';

/** The transports heat-config-notify delivers to (NO_SIGNAL sends nothing). */
export type TransportName = 'HEARTH_SIGNAL' | 'CFN_SIGNAL' | 'TEMP_URL_SIGNAL' | 'HEAT_SIGNAL';

/** Where and how one signal goes; everything needed to deliver it later, credentials included. */
export type SignalRoute =
  | { transport: 'HEARTH_SIGNAL' | 'CFN_SIGNAL'; method: 'POST'; url: string }
  | { transport: 'TEMP_URL_SIGNAL'; method: 'PUT'; url: string }
  | {
      transport: 'HEAT_SIGNAL';
      authUrl: string;
      userId: string | null;
      username: string | null;
      password: string;
      projectId: string;
      regionName: string | null;
      stackId: string;
      resourceName: string;
    };

/** What heat-config-notify reads from a deployment file (`<deployed>/<id>.json`). */
export interface DeploymentInfo {
  /** The derived config id (names the deployment's files). */
  id: string;
  name: string | null;
  /** `creation_time` as epoch ms, when present and readable. */
  createdAtMs: number | undefined;
  /** Input values by name (the last one wins, as the original's dict). */
  inputs: Readonly<Record<string, unknown>>;
}

/**
 * Reads and checks a deployment file: one that cannot be read, or is not JSON, is ExitError(EXIT_CONFIG) (this
 * machine's problem: the original exited 1); JSON that is not a deployment is ExitError(EXIT_REFUSED) (it can
 * never be signalled).
 */
export function readDeployment(path: string): DeploymentInfo {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ExitError(
      EXIT_CONFIG,
      `cannot read the deployment file ${path}: ${(error as Error).message}; check the path and that this user may read it`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    // Cut or zeroed by a crash or a full disk: the dispatcher writes it again from the metadata, so the result is
    // to be handed over again, not dropped as refused.
    throw new ExitError(
      EXIT_CONFIG,
      `the deployment file ${path} is not JSON: ${(error as Error).message}; nothing was sent: write it again (heat-config does on its next run)`,
    );
  }
  return deploymentInfo(parsed, path);
}

/** The parts of a parsed deployment object heat-config-notify uses; `source` names it in errors. */
export function deploymentInfo(parsed: unknown, source = 'the deployment'): DeploymentInfo {
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    throw new ExitError(EXIT_REFUSED, `${source} is not a JSON object (expected a deployment with "id" and "inputs")`);
  const record = parsed as Record<string, unknown>;
  const inputs: Record<string, unknown> = {};
  const list = record.inputs ?? [];
  if (!Array.isArray(list)) throw new ExitError(EXIT_REFUSED, `${source} has "inputs" that is not a list`);
  for (const input of list as unknown[]) {
    if (input === null || typeof input !== 'object') continue;
    const { name, value } = input as { name?: unknown; value?: unknown };
    if (typeof name === 'string') inputs[name] = value;
  }
  const created = typeof record.creation_time === 'string' ? Date.parse(record.creation_time) : NaN;
  return {
    id: typeof record.id === 'string' || typeof record.id === 'number' ? String(record.id) : 'unknown',
    name: typeof record.name === 'string' ? record.name : null,
    createdAtMs: Number.isNaN(created) ? undefined : created,
    inputs,
  };
}

/** An input as a non-empty string, else null (Heat's `deploy_*` inputs are all strings). */
function text(inputs: Readonly<Record<string, unknown>>, name: string): string | null {
  const value = inputs[name];
  if (value === undefined || value === null || value === '') return null;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The input each transport cannot signal without (NO_SIGNAL needs none; ZAQAR_SIGNAL is refused first). */
const INPUT_OF_TRANSPORT: ReadonlyMap<string, string> = new Map([
  ['HEARTH_SIGNAL', 'deploy_signal_id'],
  ['CFN_SIGNAL', 'deploy_signal_id'],
  ['TEMP_URL_SIGNAL', 'deploy_signal_id'],
  ['HEAT_SIGNAL', 'deploy_auth_url'],
]);

/**
 * The signal route of a deployment, or null for NO_SIGNAL. Order as the original: a
 * `deploy_signal_id` (PUT => TEMP_URL_SIGNAL, else CFN_SIGNAL, or HEARTH_SIGNAL when
 * `deploy_signal_transport` says so), then `deploy_queue_id` (ZAQAR_SIGNAL: ExitError, not
 * supported), then `deploy_auth_url` (HEAT_SIGNAL). A `deploy_signal_transport` other than NO_SIGNAL
 * without the input its transport needs is ExitError(EXIT_REFUSED).
 */
export function signalRoute(info: DeploymentInfo): SignalRoute | null {
  const inputs = info.inputs;
  const declared = text(inputs, 'deploy_signal_transport');
  const signalId = text(inputs, 'deploy_signal_id');
  if (signalId !== null) {
    if ((text(inputs, 'deploy_signal_verb') ?? 'POST').toUpperCase() === 'PUT')
      return { transport: 'TEMP_URL_SIGNAL', method: 'PUT', url: signalId };
    return { transport: declared === 'HEARTH_SIGNAL' ? 'HEARTH_SIGNAL' : 'CFN_SIGNAL', method: 'POST', url: signalId };
  }
  if (text(inputs, 'deploy_queue_id') !== null || declared === 'ZAQAR_SIGNAL') {
    throw new ExitError(
      EXIT_REFUSED,
      `deployment ${info.id} uses ZAQAR_SIGNAL, which heat-config-notify does not support (Zaqar's v1.1 API is gone): ` +
        'deploy it with signal_transport HEARTH_SIGNAL, CFN_SIGNAL, TEMP_URL_SIGNAL or HEAT_SIGNAL',
    );
  }
  const authUrl = text(inputs, 'deploy_auth_url');
  if (authUrl !== null) {
    const missing = ['deploy_password', 'deploy_project_id', 'deploy_stack_id', 'deploy_resource_name'].filter(
      (n) => text(inputs, n) === null,
    );
    if (text(inputs, 'deploy_user_id') === null && text(inputs, 'deploy_username') === null) missing.push('deploy_user_id');
    if (missing.length > 0)
      throw new ExitError(EXIT_REFUSED, `deployment ${info.id} has deploy_auth_url (HEAT_SIGNAL) but no ${missing.join(', ')}`);
    return {
      transport: 'HEAT_SIGNAL',
      authUrl,
      userId: text(inputs, 'deploy_user_id'),
      username: text(inputs, 'deploy_username'),
      password: text(inputs, 'deploy_password')!,
      projectId: text(inputs, 'deploy_project_id')!,
      regionName: text(inputs, 'deploy_region_name'),
      stackId: text(inputs, 'deploy_stack_id')!,
      resourceName: text(inputs, 'deploy_resource_name')!,
    };
  }
  // A transport named without its inputs (hearth-server leaves them out while the server has no credential):
  // the server waits for this signal, so taking it for NO_SIGNAL would hide a deployment bound to time out.
  const needed = declared === null ? undefined : INPUT_OF_TRANSPORT.get(declared);
  if (needed !== undefined)
    throw new ExitError(
      EXIT_REFUSED,
      `deployment ${info.id} names deploy_signal_transport ${declared} but has no ${needed}, so its result cannot be signalled ` +
        'and the server will time it out: check that this server has its credentials, then deploy again',
    );
  return null;
}
