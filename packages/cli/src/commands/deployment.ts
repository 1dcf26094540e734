import type { SoftwareDeployment, SoftwareDeploymentCreate, SoftwareDeploymentUpdate, TimelineEntry } from '@hearth/protocol';
import { HearthApiError, type HearthClient } from '@hearth/client';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { collect, parseId, parseKeyValues, parseSeconds } from '../flag-values.ts';
import { addExamples, DEPLOYMENT_CREATE_EXAMPLES, DEPLOYMENT_EXAMPLES } from '../help-examples.ts';
import { formatFields, shellWord } from '../output.ts';
import { DEPLOYMENT_ACTIONS } from '../protocol-values.ts';
import { openSession, type CliDeps } from '../session.ts';
import { registerDeploymentOutputCommand } from './deployment-output.ts';
import { registerDeploymentWaitCommand } from './deployment-wait.ts';

/** Longest action name hearth-server takes (Heat's column is 255 characters). */
const MAX_ACTION_LENGTH = 255;

/**
 * `--action`: one of Heat's five in any case (given back in upper case), or a custom action, which
 * heatclient's `--action` also takes; it reaches the hook as `deploy_action`.
 */
export function parseAction(text: string): string {
  const known = DEPLOYMENT_ACTIONS.find((action) => action === text.toUpperCase());
  if (known) return known;
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (text.length === 0 || text.length > MAX_ACTION_LENGTH || /[\u0000-\u001f\u007f]/.test(text)) {
    throw usageError(
      `--action ${JSON.stringify(text)} is not an action name`,
      `give ${DEPLOYMENT_ACTIONS.join(', ')} or a custom name of 1-${MAX_ACTION_LENGTH} printable characters`,
    );
  }
  return text;
}

/** How many times `update --input` reads, merges and writes before it gives up on a deployment that keeps changing. */
const MERGE_ATTEMPTS = 5;

/**
 * Sets some inputs and keeps the others: reads the deployment, merges, and writes with `If-Match`,
 * so a change made meanwhile (another operator's, a signal's) is never undone; on a 412 it reads
 * again. A server that sends no ETag gets a plain write, as before.
 */
async function mergeInputs(
  client: Pick<HearthClient, 'readDeployment' | 'updateDeployment'>,
  id: string,
  inputs: Record<string, unknown>,
  action: SoftwareDeploymentUpdate['action'],
): Promise<SoftwareDeployment> {
  for (let attempt = 1; ; attempt++) {
    const { deployment, etag } = await client.readDeployment(id);
    const body = { ...(action === undefined ? {} : { action }), input_values: { ...deployment.input_values, ...inputs } };
    try {
      return await client.updateDeployment(id, body, { ifMatch: etag });
    } catch (error) {
      if (!(error instanceof HearthApiError && error.code === 'ERR_DEPLOYMENT_CHANGED') || attempt >= MERGE_ATTEMPTS) throw error;
    }
  }
}

/** Longest value, as JSON, that `deployment show` prints whole; a longer one is cut, with where to read all of it. */
const SHOWN_VALUE_LENGTH = 200;

/** The first `count` UTF-16 units of `text`, less a high surrogate whose pair was cut off. */
function firstCharacters(text: string, count: number): string {
  return text.slice(0, count).replace(/[\uD800-\uDBFF]$/, '');
}

/**
 * Inputs or outputs for the `key: value` lines: the object as it is when its JSON is short, else one
 * `name: JSON` line per value, each cut at SHOWN_VALUE_LENGTH with its size and the command that
 * prints it whole (an output of megabytes, as one JSON line, would flood the terminal).
 */
export function shownValues(values: Record<string, unknown> | null | undefined, whole: (name: string) => string): unknown {
  if (values === null || values === undefined || JSON.stringify(values).length <= SHOWN_VALUE_LENGTH) return values;
  const lines = Object.entries(values).map(([name, value]) => {
    const json = JSON.stringify(value) ?? 'null';
    if (json.length <= SHOWN_VALUE_LENGTH) return `${name}: ${json}`;
    let characters = 0;
    for (const _char of typeof value === 'string' ? value : json) characters += 1;
    const size = typeof value === 'string' ? `${characters} characters` : `${characters} characters as JSON`;
    // A string is cut before it is escaped, so no escape is cut in half; JSON loses a partial escape at the end.
    const cut =
      typeof value === 'string'
        ? JSON.stringify(firstCharacters(value, SHOWN_VALUE_LENGTH)).slice(0, -1)
        : firstCharacters(json, SHOWN_VALUE_LENGTH).replace(/(?<!\\)((?:\\\\)*)\\(?:u[0-9a-fA-F]{0,3})?$/, '$1');
    return `${name}: ${cut}… (${size}; all of it: ${whole(name)})`;
  });
  return `${lines.join('\n')}\n`;
}

/** The `key: value` lines of a deployment. */
export function deploymentFields(d: SoftwareDeployment): Array<[string, unknown]> {
  return [
    ['id', d.id],
    ['name', d.name],
    ['config_id', d.config_id],
    ['server_id', d.server_id],
    ['action', d.action],
    ['status', d.status],
    ['status_reason', d.status_reason],
    ['signal_transport', d.signal_transport],
    ['timeout', d.timeout],
    ['deadline', d.deadline],
    ['creation_time', d.creation_time],
    ['updated_time', d.updated_time],
    ['fetched_time', d.fetched_time],
    ['last_heartbeat_time', d.last_heartbeat_time],
    ['input_values', shownValues(d.input_values, () => `hearth --json deployment show ${d.id}`)],
    ['output_values', shownValues(d.output_values, (name) => `hearth deployment output ${d.id} ${shellWord(name)}`)],
  ];
}

/** The flags of `deployment create`. */
interface CreateFlags {
  config: string;
  server: string;
  input?: string[];
  action?: string;
  timeout?: string;
  name?: string;
  signal: boolean;
}

/** Turns `deployment create` flags into the POST /software_deployments body. */
export function buildDeploymentCreate(flags: CreateFlags): SoftwareDeploymentCreate {
  const body: SoftwareDeploymentCreate = { config_id: parseId(flags.config, 'config', '--config'), server_id: flags.server };
  if (flags.input !== undefined) body.input_values = parseKeyValues(flags.input, '--input');
  if (flags.action !== undefined) body.action = parseAction(flags.action);
  if (flags.timeout !== undefined) body.timeout = parseSeconds(flags.timeout, '--timeout');
  if (flags.name !== undefined) body.name = flags.name;
  if (!flags.signal) body.signal_transport = 'NO_SIGNAL';
  return body;
}

/** Registers `hearth deployment ...`. */
export function registerDeploymentCommands(program: Command, deps: CliDeps): void {
  const deployment = program.command('deployment').description('deploy configs to servers and follow them');
  addExamples(deployment, DEPLOYMENT_EXAMPLES);
  const show = (d: SoftwareDeployment): string => formatFields(deploymentFields(d));

  const create = deployment
    .command('create')
    .description('deploy a config to a server')
    .requiredOption('--config <id>', 'software config id')
    .requiredOption('--server <id>', 'server id')
    .option('--input <key=value>', 'input value; KEY:=JSON for a JSON value (repeatable)', collect)
    .option('--action <action>', `action: ${DEPLOYMENT_ACTIONS.join(', ')} or a custom one (default CREATE)`)
    .option('--timeout <seconds>', 'seconds the agent has to signal before the deployment fails (default 3600)')
    .option('--name <name>', 'deployment name')
    .option('--no-signal', 'do not wait for a signal: the deployment is COMPLETE at once')
    .action(async (flags: CreateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await session.client().createDeployment(buildDeploymentCreate(flags));
      session.out.result({ software_deployment: created }, () => show(created));
    });
  addExamples(create, DEPLOYMENT_CREATE_EXAMPLES);

  deployment
    .command('list')
    .description('list deployments')
    .option('--server <id>', 'only deployments to this server')
    .action(async (flags: { server?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const deployments = await session.client().listDeployments({ serverId: flags.server });
      const to = flags.server === undefined ? '' : ` to server ${flags.server}`;
      session.out.list<SoftwareDeployment>(
        { software_deployments: deployments },
        [
          { header: 'id', value: (d) => d.id },
          { header: 'name', value: (d) => d.name },
          { header: 'server', value: (d) => d.server_id },
          { header: 'action', value: (d) => d.action },
          { header: 'status', value: (d) => d.status },
          { header: 'updated', value: (d) => d.updated_time ?? d.creation_time },
        ],
        deployments,
        `no deployments${to} in project ${session.options.project}`,
      );
    });

  deployment
    .command('show')
    .description('show one deployment')
    .argument('<id>', 'deployment id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const deploymentId = parseId(id, 'deployment');
      const found = await session.client().getDeployment(deploymentId);
      session.out.result({ software_deployment: found }, () => show(found));
    });

  deployment
    .command('update')
    .description('start a new action on a deployment, or change its inputs (merged over the current ones)')
    .argument('<id>', 'deployment id')
    .option('--action <action>', `action: ${DEPLOYMENT_ACTIONS.join(', ')} or a custom one`)
    .option('--input <key=value>', 'input value to set; KEY:=JSON for a JSON value (repeatable)', collect)
    .action(async (id: string, flags: { action?: string; input?: string[] }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const deploymentId = parseId(id, 'deployment');
      if (flags.action === undefined && flags.input === undefined) {
        throw usageError('nothing to update: give --action and/or --input');
      }
      const action = flags.action === undefined ? undefined : parseAction(flags.action);
      const inputs = flags.input === undefined ? undefined : parseKeyValues(flags.input, '--input');
      const client = session.client();
      const updated =
        inputs === undefined
          ? await client.updateDeployment(deploymentId, { ...(action === undefined ? {} : { action }) })
          : await mergeInputs(client, deploymentId, inputs, action);
      session.out.result({ software_deployment: updated }, () => show(updated));
    });

  deployment
    .command('delete')
    .description('delete a deployment')
    .argument('<id>', 'deployment id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const deploymentId = parseId(id, 'deployment');
      await session.client().deleteDeployment(deploymentId);
      session.out.result({ deleted: true, id }, () => `deleted deployment ${id}\n`);
    });

  registerDeploymentOutputCommand(deployment, deps);
  registerDeploymentWaitCommand(deployment, deps);

  deployment
    .command('timeline')
    .description('show what happened to a deployment, oldest first')
    .argument('<id>', 'deployment id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const deploymentId = parseId(id, 'deployment');
      const timeline = await session.client().getTimeline(deploymentId);
      session.out.list<TimelineEntry>(
        { timeline },
        [
          { header: 'time', value: (e) => e.time },
          { header: 'type', value: (e) => e.type },
          { header: 'message', value: (e) => e.message },
        ],
        timeline,
        `deployment ${deploymentId} has no timeline entries`,
      );
    });
}
