import { writeFileAtomic } from '@hearth/agent-kit/atomic-file';
import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  CREDENTIAL_INPUTS,
  clearOutputs,
  collectOutputs,
  describeValue,
  ensureDir,
  failedResult,
  hookDirs,
  inputValue,
  outputsBase,
  pythonJson,
  runHook,
  runTool,
  stringify,
  toolCommand,
  toolResult,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: chef < deployment.json

heat-config hook for group "chef": runs chef-client in local mode (chef-zero) with the config as the run
list. Writes <working>/client.rb (0600) and <working>/node/<fqdn>.json (0600: the inputs as attributes,
plus run_list), optionally clones the kitchen, then runs in <working>, with heat_outputs_path=<outputs>/<id>:
  CMD -z --config <working>/client.rb -j <working>/node/<fqdn>.json
Declared outputs are read from <outputs>/<id>.<name>.
Prints {deploy_stdout, deploy_stderr, deploy_status_code (chef-client's exit code), <outputs>...}.

inputs:
  environment          becomes "environment '<value>'" in client.rb instead of an attribute
  deploy_* (transport) left out of the node attributes

options:
  kitchen              git URL cloned to kitchen_path (again when deploy_action is UPDATE, or when
                       kitchen_path holds a clone of another URL); a clone of the same URL is kept
  kitchen_path         default <working>/kitchen, relative to <working> (cookbooks/, roles/, environments/ under it)
  expose_credentials   also put deploy_password in the node attributes (default false)

env:
  HEAT_CHEF_WORKING    default /var/lib/heat-config/heat-config-chef
  HEAT_CHEF_OUTPUTS    default /var/run/heat-config/heat-config-chef
  HEAT_CHEF_CMD        default chef-client
`;

/** Inputs the original kept out of the node attributes: the deployment's own transport data. */
const DEPLOY_KEYS = new Set([
  'deploy_server_id',
  'deploy_action',
  'deploy_stack_id',
  'deploy_resource_name',
  'deploy_signal_transport',
  'deploy_signal_id',
  'deploy_signal_verb',
]);

/** `text` as a Ruby single-quoted string literal. */
function rubyString(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** The run list from the config: JSON text parsed, a list or object as is; undefined when it is neither. */
function runList(config: unknown): unknown {
  if (Array.isArray(config) || (typeof config === 'object' && config !== null)) return config;
  if (typeof config !== 'string') return undefined;
  try {
    return JSON.parse(config) as unknown;
  } catch {
    return undefined;
  }
}

/** Whether `kitchenPath` holds a clone of `kitchen` (its origin is that URL), so a re-run can keep it. */
async function clonedFrom(kitchen: string, kitchenPath: string, context: HookContext): Promise<boolean> {
  if (!existsSync(join(kitchenPath, '.git'))) return false;
  const origin = await runTool('git', ['-C', kitchenPath, 'config', '--get', 'remote.origin.url'], { log: context.log });
  return !origin.failed && origin.stdout.trim() === kitchen;
}

/**
 * Clones the kitchen when asked (in `working`, as the original ran git there); a failed clone is the
 * deployment's result, undefined when all is well.
 */
async function prepareKitchen(
  context: HookContext,
  kitchen: string | undefined,
  kitchenPath: string,
  working: string,
): Promise<HookResult | undefined> {
  if (kitchen === undefined) return undefined;
  const { deployment, log } = context;
  if (inputValue(deployment, 'deploy_action') === 'UPDATE') rmSync(kitchenPath, { recursive: true, force: true });
  else if (await clonedFrom(kitchen, kitchenPath, context)) {
    log.info('kitchen already cloned, kept', { kitchenPath });
    return undefined;
  } else if (existsSync(join(kitchenPath, '.git'))) {
    // Another deployment's kitchen (the default kitchen_path is shared): running its cookbooks would be wrong.
    log.info('kitchen path holds another clone, cloned again', { kitchen, kitchenPath });
    rmSync(kitchenPath, { recursive: true, force: true });
  }
  log.info('cloning kitchen', { kitchen, kitchenPath });
  // `--`: a kitchen (or path) beginning with '-' is a repository, never a git option (--upload-pack=... runs a command).
  const clone = await runTool('git', ['clone', '--', kitchen, kitchenPath], { cwd: working, log });
  return clone.failed ? toolResult(clone) : undefined;
}

/** Writes client.rb and the node file, runs chef-client -z and reports its exit code, output and declared outputs. */
async function runChef(context: HookContext): Promise<HookResult> {
  const { deployment, log, env } = context;
  const dirs = hookDirs('chef', env);
  ensureDir(dirs.outputs);
  ensureDir(dirs.working);
  const options = deployment.options;
  const kitchen = typeof options.kitchen === 'string' && options.kitchen !== '' ? options.kitchen : undefined;
  // A relative kitchen_path is under <working>, where the original (and chef-client) ran: not the hook's own cwd.
  const kitchenPath = resolve(
    dirs.working,
    typeof options.kitchen_path === 'string' && options.kitchen_path !== '' ? options.kitchen_path : 'kitchen',
  );
  const clientConfig = [
    'log_level :debug',
    'log_location STDOUT',
    'local_mode true',
    'chef_zero.enabled true',
    `cookbook_path ${rubyString(join(kitchenPath, 'cookbooks'))}`,
    `role_path ${rubyString(join(kitchenPath, 'roles'))}`,
    `environment_path ${rubyString(join(kitchenPath, 'environments'))}`,
  ];
  const cloneFailure = await prepareKitchen(context, kitchen, kitchenPath, dirs.working);
  if (cloneFailure !== undefined) return cloneFailure;

  const hostname = await runTool('hostname', ['-f'], { log });
  const fqdn = hostname.stdout.trim();
  if (hostname.failed || fqdn === '') {
    const status = hostname.exitCode !== null && hostname.exitCode !== 0 ? hostname.exitCode : 1;
    return failedResult(`chef hook: could not determine the host name with hostname -f\n${hostname.stderr}`, status);
  }
  if (!/^[A-Za-z0-9._-]+$/.test(fqdn))
    return failedResult(`chef hook: hostname -f gave ${describeValue(fqdn)}, which cannot name the node file`);

  const list = runList(deployment.config);
  if (list === undefined) return failedResult(`chef hook: config must be a JSON run list (got ${describeValue(deployment.config)})`);
  const exposeCredentials = options.expose_credentials === true;
  const node: Record<string, unknown> = {};
  for (const input of deployment.inputs) {
    if (input.name === 'environment') clientConfig.push(`environment ${rubyString(stringify(input.value))}`);
    else if (!DEPLOY_KEYS.has(input.name) && (exposeCredentials || !CREDENTIAL_INPUTS.has(input.name))) node[input.name] = input.value;
  }
  node.run_list = list;
  const nodePath = ensureDir(join(dirs.working, 'node'));
  const nodeFile = join(nodePath, `${fqdn}.json`);
  await writeFileAtomic(nodeFile, pythonJson(node), { mode: 0o600 });
  clientConfig.push(`node_path ${rubyString(nodePath)}`);
  const configPath = join(dirs.working, 'client.rb');
  await writeFileAtomic(configPath, clientConfig.join('\n'), { mode: 0o600 });

  const base = outputsBase(dirs.outputs, deployment);
  clearOutputs(base, deployment);
  const command = toolCommand('HEAT_CHEF_CMD', 'chef-client', env);
  const result = await runTool(command, ['-z', '--config', configPath, '-j', nodeFile], {
    cwd: dirs.working,
    env: { heat_outputs_path: base },
    log,
  });
  return toolResult(result, collectOutputs(base, deployment));
}

runHook({ group: 'chef', usage: USAGE, run: runChef });
