import type { Server, ServerCreate, ServerCreated } from '@hearth/protocol';
import type { Transport } from './http.ts';
import { projectPath } from './paths.ts';
import { callForField, envelopeField } from './reply.ts';

/** Operator calls on registered servers (VMs). */
export interface ServerMethods {
  /**
   * Registers a server; the reply's agent credential is shown only this once, with the
   * os-collect-config settings (object and ready `/etc/os-collect-config.conf` text) for its transport.
   */
  createServer(body: ServerCreate): Promise<ServerCreated>;
  /** Lists the project's servers. */
  listServers(): Promise<Server[]>;
  /** Fetches one server by id. */
  getServer(id: string): Promise<Server>;
  /** Deletes a server and its credential. */
  deleteServer(id: string): Promise<void>;
}

/** Builds the server methods on a transport. */
export function serverMethods(transport: Transport): ServerMethods {
  const { project } = transport.options;
  return {
    async createServer(body) {
      const spec = { method: 'POST', path: projectPath(project, 'servers'), auth: 'operator', json: body } as const;
      const reply = await transport.call(spec);
      return {
        server: envelopeField<ServerCreated['server']>(reply, 'server', spec),
        credential: envelopeField<ServerCreated['credential']>(reply, 'credential', spec),
        os_collect_config: envelopeField<ServerCreated['os_collect_config']>(reply, 'os_collect_config', spec),
        os_collect_config_conf: envelopeField<ServerCreated['os_collect_config_conf']>(reply, 'os_collect_config_conf', spec, 'string'),
      };
    },
    listServers: () =>
      callForField<Server[]>(transport, { method: 'GET', path: projectPath(project, 'servers'), auth: 'operator' }, 'servers'),
    getServer: (id) =>
      callForField<Server>(transport, { method: 'GET', path: projectPath(project, 'servers', id), auth: 'operator' }, 'server'),
    async deleteServer(id) {
      await transport.call({ method: 'DELETE', path: projectPath(project, 'servers', id), auth: 'operator' });
    },
  };
}
