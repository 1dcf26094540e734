import type { Server, ServerCreate, ServerCreated } from '@hearth/protocol';
import type { Command } from 'commander';
import { usageError } from '../errors.ts';
import { parseChoice } from '../flag-values.ts';
import { addExamples, SERVER_CREATE_EXAMPLES, SERVER_EXAMPLES } from '../help-examples.ts';
import { formatFields } from '../output.ts';
import { CONFIG_TRANSPORTS, RESOURCE_NAME_PATTERN } from '../protocol-values.ts';
import { openSession, type CliDeps } from '../session.ts';
import { escapeControls } from '../terminal-text.ts';

/** Where os-collect-config reads its settings in the VM. */
export const OS_COLLECT_CONFIG_CONF_PATH = '/etc/os-collect-config.conf';

/** The `key: value` lines of a server. */
export function serverFields(server: Server): Array<[string, unknown]> {
  return [
    ['id', server.id],
    ['name', server.name],
    ['project_id', server.project_id],
    ['access_key_id', server.access_key_id],
    ['software_config_transport', server.software_config_transport],
    ['stack_name', server.stack_name],
    ['stack_id', server.stack_id],
    ['resource_name', server.resource_name],
    ['creation_time', server.creation_time],
    ['last_seen', server.last_seen],
  ];
}

/** The flags of `server create`. */
export interface ServerCreateFlags {
  id?: string | undefined;
  transport?: string | undefined;
  stack?: string | undefined;
  resourceName?: string | undefined;
}

/** Turns `server create` flags into the POST /servers body; throws a usage error for a bad value. */
export function buildServerCreate(name: string, flags: ServerCreateFlags): ServerCreate {
  const body: ServerCreate = { name };
  if (flags.id !== undefined) body.id = flags.id;
  if (flags.transport !== undefined) body.software_config_transport = parseChoice(flags.transport, '--transport', CONFIG_TRANSPORTS);
  if (flags.stack !== undefined) {
    if (flags.stack === '') throw usageError('--stack is empty: give a stack name or id');
    body.stack = flags.stack;
  }
  if (flags.resourceName !== undefined) {
    if (flags.stack === undefined) throw usageError('--resource-name needs --stack: it names the server inside that stack');
    if (!RESOURCE_NAME_PATTERN.test(flags.resourceName)) {
      throw usageError(
        `--resource-name ${JSON.stringify(flags.resourceName)} is not valid`,
        "use 1-255 letters, digits, '_', '.', ':' or '-' (no '/' or spaces)",
      );
    }
    body.resource_name = flags.resourceName;
  }
  return body;
}

/** Human text of `server create`: the server, its one-time credential, then its os-collect-config.conf. */
export function formatServerCreated(created: ServerCreated): string {
  const { credential } = created;
  return (
    formatFields(serverFields(created.server)) +
    '\nagent credential (shown only this once: store it now, it cannot be read again):\n' +
    formatFields([
      ['token', credential.token],
      ['access_key_id', credential.access_key_id],
      ['secret_access_key', credential.secret_access_key],
      ['metadata_url', credential.metadata_url],
    ])
      .split('\n')
      .map((line) => (line === '' ? line : `  ${line}`))
      .join('\n') +
    `\nos-collect-config settings for transport ${created.server.software_config_transport} ` +
    `(write the lines between the markers to ${OS_COLLECT_CONFIG_CONF_PATH} in the VM; they hold the credential):\n` +
    `--- ${OS_COLLECT_CONFIG_CONF_PATH} ---\n` +
    `${escapeControls(created.os_collect_config_conf, '\n\t').replace(/\n?$/, '\n')}` +
    `--- end ---\n`
  );
}

/** Registers `hearth server create|list|show|delete`. */
export function registerServerCommands(program: Command, deps: CliDeps): void {
  const server = program.command('server').description('register and manage servers (VMs running the hearth agent)');
  addExamples(server, SERVER_EXAMPLES);

  const create = server
    .command('create')
    .description('register a server; prints its agent credential (shown only once) and its os-collect-config.conf')
    .argument('<name>', 'server name')
    .option('--id <id>', 'server id to use (e.g. the Nova instance uuid); default: one is made')
    .option('--transport <transport>', `how its agent fetches metadata: ${CONFIG_TRANSPORTS.join(', ')} (default HEARTH_LONG_POLL)`)
    .option('--stack <stack>', 'put the server in this stack (name or id)')
    .option('--resource-name <name>', 'its resource name in --stack (default: the server name)')
    .action(async (name: string, flags: ServerCreateFlags, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await session.client().createServer(buildServerCreate(name, flags));
      session.out.result(created, () => formatServerCreated(created));
      if (session.out.json) session.out.note('hearth: the agent credential is shown only this once: store it now, it cannot be read again');
    });
  addExamples(create, SERVER_CREATE_EXAMPLES);

  server
    .command('list')
    .description('list registered servers')
    .action(async (_flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const servers = await session.client().listServers();
      session.out.list<Server>(
        { servers },
        [
          { header: 'id', value: (s) => s.id },
          { header: 'name', value: (s) => s.name },
          { header: 'last seen', value: (s) => s.last_seen },
          { header: 'created', value: (s) => s.creation_time },
        ],
        servers,
        `no servers in project ${session.options.project}`,
      );
    });

  server
    .command('show')
    .description('show one server')
    .argument('<id>', 'server id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const found = await session.client().getServer(id);
      session.out.result({ server: found }, () => formatFields(serverFields(found)));
    });

  server
    .command('delete')
    .description("delete a server: revokes its credential and its deployments' signal credentials, and fails its deployments in progress")
    .argument('<id>', 'server id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      await session.client().deleteServer(id);
      session.out.result({ deleted: true, id }, () => `deleted server ${id}\n`);
    });
}
