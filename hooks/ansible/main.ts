import { writeFileAtomic } from '@hearth/agent-kit/atomic-file';
import { pyJsonDumps } from '@hearth/agent-kit/python-json';
import { isAbsolute, join } from 'node:path';
import {
  CREDENTIAL_INPUTS,
  clearOutputs,
  collectOutputs,
  describeValue,
  ensureDir,
  failedResult,
  hookDirs,
  hookResult,
  outputsBase,
  runHook,
  runTool,
  toolCommand,
  toolResult,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: ansible < deployment.json

heat-config hook for group "ansible": writes the config (a playbook) to <working>/<id>_playbook.yaml and
the variables (heat_config_id, every input by name with its JSON type kept, heat_outputs_path) to
<working>/<id>_variables.json (both 0600), then runs in <working>:
  CMD -i INVENTORY [--module-path M] [--skip-tags S] [--tags T] <playbook> --extra-vars @<variables>
Declared outputs are read from <outputs>/<id>.<name>.
Prints {deploy_stdout, deploy_stderr, deploy_status_code (ansible-playbook's exit code), <outputs>...}.

options:
  tags, skip_tags       --tags / --skip-tags (a list is joined with commas)
  modulepath            --module-path
  callback_plugins      env ANSIBLE_CALLBACK_PLUGINS
  inventory             inventory file, relative to <working> (absolute is used as is)
  expose_credentials    also put deploy_password and deploy_signal_id in the variables (default false)

env:
  HEAT_ANSIBLE_WORKING    default /var/lib/heat-config/heat-config-ansible
  HEAT_ANSIBLE_OUTPUTS    default /var/run/heat-config/heat-config-ansible
  HEAT_ANSIBLE_CMD        default ansible-playbook
  HEAT_ANSIBLE_INVENTORY  default localhost,
`;

/** An option as command-line text: strings as they are, lists joined with commas, other scalars as text; absent or '' is undefined. */
function optionText(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '' || value === false) return undefined;
  if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' ? item : JSON.stringify(item))).join(',') || undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The ansible-playbook argv: the original's, flags inserted before the playbook in the same order. */
function ansibleArgs(inventory: string, playbook: string, variables: string, options: Record<string, unknown>): string[] {
  const flags: string[] = [];
  const modulePath = optionText(options.modulepath);
  const skipTags = optionText(options.skip_tags);
  const tags = optionText(options.tags);
  if (modulePath !== undefined) flags.push('--module-path', modulePath);
  if (skipTags !== undefined) flags.push('--skip-tags', skipTags);
  if (tags !== undefined) flags.push('--tags', tags);
  return ['-i', inventory, ...flags, playbook, '--extra-vars', `@${variables}`];
}

/** Writes the playbook and its variables, runs ansible-playbook and reports its exit code, output and declared outputs. */
async function runAnsible({ deployment, log, env }: HookContext): Promise<HookResult> {
  const dirs = hookDirs('ansible', env);
  ensureDir(dirs.outputs);
  ensureDir(dirs.working);
  if (deployment.config === null || deployment.config === '') {
    log.warn('no config: nothing to do');
    return hookResult({ stdout: '', stderr: 'ansible hook: the deployment has no config (playbook), nothing to do\n', status: 0 });
  }
  if (typeof deployment.config !== 'string') {
    return failedResult(`ansible hook: config must be the text of a playbook (got ${describeValue(deployment.config)})`);
  }
  const base = outputsBase(dirs.outputs, deployment);
  const exposeCredentials = deployment.options.expose_credentials === true;
  // A Map keeps the original's key order (a key like "1" included), and json.dumps' text keeps a Float input a Float.
  const variables = new Map<string, unknown>([['heat_config_id', deployment.id]]);
  for (const input of deployment.inputs) {
    if (exposeCredentials || !CREDENTIAL_INPUTS.has(input.name)) variables.set(input.name, input.value);
  }
  variables.set('heat_outputs_path', base);

  const playbook = join(dirs.working, `${deployment.id}_playbook.yaml`);
  const variablesFile = join(dirs.working, `${deployment.id}_variables.json`);
  await writeFileAtomic(variablesFile, pyJsonDumps(variables), { mode: 0o600 });
  await writeFileAtomic(playbook, deployment.config, { mode: 0o600 });
  clearOutputs(base, deployment);

  const inventoryOption = optionText(deployment.options.inventory);
  const inventory =
    inventoryOption === undefined
      ? toolCommand('HEAT_ANSIBLE_INVENTORY', 'localhost,', env)
      : isAbsolute(inventoryOption)
        ? inventoryOption
        : join(dirs.working, inventoryOption);
  const callbackPlugins = optionText(deployment.options.callback_plugins);
  const command = toolCommand('HEAT_ANSIBLE_CMD', 'ansible-playbook', env);
  const result = await runTool(command, ansibleArgs(inventory, playbook, variablesFile, deployment.options), {
    cwd: dirs.working,
    env: callbackPlugins === undefined ? {} : { ANSIBLE_CALLBACK_PLUGINS: callbackPlugins },
    log,
  });
  return toolResult(result, collectOutputs(base, deployment));
}

runHook({ group: 'ansible', usage: USAGE, run: runAnsible });
