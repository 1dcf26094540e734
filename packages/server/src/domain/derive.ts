import { heatTime, type DerivedConfig, type SoftwareConfig, type StoredInput } from '@hearth/protocol';
import type { DeploymentRow } from '../store/schema.ts';
import { placementOf } from './stacks.ts';
import { UNGROUPED } from './configs.ts';

/** How the agent signals a deployment's result: the transport's `deploy_*` inputs, in order. */
export interface SignalEndpoint {
  inputs: Array<[name: string, value: string]>;
}

const DEPLOY_INPUT_DESCRIPTIONS: Record<string, string> = {
  deploy_server_id: 'ID of the server being deployed to',
  deploy_action: 'Name of the current action being deployed',
  deploy_stack_id: 'ID of the stack this deployment belongs to',
  deploy_resource_name: 'Name of this deployment resource in the stack',
  deploy_signal_transport: 'How the server should signal to heat with the deployment output values.',
  deploy_signal_id: 'ID of signal to use for signaling output values',
  deploy_signal_verb: 'HTTP verb to use for signaling outputvalues',
  deploy_auth_url: 'URL for API authentication',
  deploy_username: 'Username for API authentication',
  deploy_user_id: 'User ID for API authentication',
  deploy_password: 'Password for API authentication',
  deploy_project_id: 'ID of project for API authentication',
  deploy_timeout: 'Seconds hearth-server waits for this deployment to signal (hearth)',
};

function deployInput(name: string, value: string): StoredInput {
  return { name, type: 'String', description: DEPLOY_INPUT_DESCRIPTIONS[name] ?? name, value };
}

/**
 * Builds the derived config a server receives for one deployment, as Heat's SoftwareDeployment
 * resource does (reference/server.md §3.3): declared inputs with their values, then undeclared
 * input values as Strings, then the `deploy_*` inputs of the signal transport. A source config
 * that already declares a `deploy_*` input (heatclient builds such configs) gets its value set,
 * not a second copy.
 */
export function deriveConfig(config: SoftwareConfig, deployment: DeploymentRow, signal: SignalEndpoint | null): DerivedConfig {
  const values = JSON.parse(deployment.input_values) as Record<string, unknown>;
  const inputs: StoredInput[] = [];
  const declared = new Set<string>();
  for (const input of config.inputs) {
    declared.add(input.name);
    // Every derived input has a `value`, null when neither given nor defaulted, as Heat's has:
    // 55-heat-config reads `input['value']` of each input and fails the whole deployment
    // (KeyError, so no hook and no signal) when the key is missing. A value stored in the config
    // wins over its default: heatclient (`openstack software deployment create --input-value`)
    // sends a config derived on the client side, with the operator's value beside the default.
    const value = Object.hasOwn(values, input.name) ? values[input.name] : (input.value ?? input.default ?? null);
    inputs.push({ ...input, value });
  }
  for (const [name, value] of Object.entries(values)) {
    if (!declared.has(name)) inputs.push({ name, type: 'String', value });
  }
  const placement = placementOf(deployment, 'deployment');
  const deployInputs: StoredInput[] = [
    deployInput('deploy_server_id', deployment.server_id),
    deployInput('deploy_action', deployment.action),
    deployInput('deploy_stack_id', `${placement.stackName}/${placement.stackId}`),
    deployInput('deploy_resource_name', placement.resourceName),
    deployInput('deploy_signal_transport', deployment.signal_transport),
  ];
  for (const [name, value] of signal?.inputs ?? []) deployInputs.push(deployInput(name, value));
  // hearth's own, after Heat's: agents bound the hook's run time and the outbox's retries by it.
  deployInputs.push({ ...deployInput('deploy_timeout', String(deployment.timeout_s)), type: 'Number' });
  for (const input of deployInputs) {
    const index = inputs.findIndex((i) => i.name === input.name);
    if (index >= 0) inputs[index] = { ...inputs[index]!, value: input.value };
    else inputs.push(input);
  }
  // Heat falls back on empty values too (`or`): an entry with an empty name is skipped by
  // os-collect-config, and hook-script writes `config` to a file, which fails on null.
  return {
    id: deployment.derived_config_id,
    name: deployment.name || config.name || deployment.id,
    group: config.group || UNGROUPED,
    creation_time: heatTime(new Date(deployment.derived_at)),
    config: config.config ?? '',
    options: config.options,
    inputs,
    outputs: config.outputs,
  };
}

/** Compares strings by code point, as Python does (`<` compares UTF-16 units: U+1F600 < U+FF21). */
function compareCodePoints(a: string, b: string): number {
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const l = left.next();
    const r = right.next();
    if (l.done || r.done) return l.done === r.done ? 0 : l.done ? -1 : 1;
    const diff = l.value.codePointAt(0)! - r.value.codePointAt(0)!;
    if (diff !== 0) return diff;
  }
}

/** Orders a server's derived configs as Heat does: by name (code point order), ties in creation order. */
export function sortDerived(entries: Array<{ derived: DerivedConfig; createdAt: string; id: string }>): DerivedConfig[] {
  return entries
    .sort((a, b) => compareCodePoints(a.derived.name, b.derived.name) || a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
    .map((e) => e.derived);
}
