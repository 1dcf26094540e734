import type { Server, ServerCreated } from '@hearth/protocol';
import type { Command } from 'commander';
import { formatFields, formatTable } from '../output.ts';
import { openSession, type CliDeps } from '../session.ts';

/** The `key: value` lines of a server. */
export function serverFields(server: Server): Array<[string, unknown]> {
  return [
    ['id', server.id],
    ['name', server.name],
    ['project_id', server.project_id],
    ['access_key_id', server.access_key_id],
    ['creation_time', server.creation_time],
    ['last_seen', server.last_seen],
  ];
}

/** Human text of `server create`: the server, then its one-time credential. */
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
      .join('\n')
  );
}

/** Registers `hearth server create|list|show|delete`. */
export function registerServerCommands(program: Command, deps: CliDeps): void {
  const server = program.command('server').description('register and manage servers (VMs running the hearth agent)');

  server
    .command('create')
    .description('register a server; prints its agent credential, shown only once')
    .argument('<name>', 'server name')
    .option('--id <id>', 'server id to use (e.g. the Nova instance uuid); default: one is made')
    .action(async (name: string, flags: { id?: string }, cmd: Command) => {
      const session = openSession(cmd, deps);
      const created = await session.client().createServer({ name, ...(flags.id === undefined ? {} : { id: flags.id }) });
      session.out.result(created, () => formatServerCreated(created));
      if (session.out.json) session.out.note('hearth: the agent credential is shown only this once: store it now, it cannot be read again');
    });

  server
    .command('list')
    .description('list registered servers')
    .action(async (_flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const servers = await session.client().listServers();
      session.out.result({ servers }, () =>
        formatTable<Server>(
          [
            { header: 'id', value: (s) => s.id },
            { header: 'name', value: (s) => s.name },
            { header: 'last seen', value: (s) => s.last_seen },
            { header: 'created', value: (s) => s.creation_time },
          ],
          servers,
        ),
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
    .description('delete a server and revoke its credential')
    .argument('<id>', 'server id')
    .action(async (id: string, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      await session.client().deleteServer(id);
      session.out.result({ deleted: true, id }, () => `deleted server ${id}\n`);
    });
}
