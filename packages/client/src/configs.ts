import type { SoftwareConfig, SoftwareConfigCreate, SoftwareConfigSummary } from '@hearth/protocol';
import type { Transport } from './http.ts';
import { projectPath } from './paths.ts';
import { callForField } from './reply.ts';

/** Paging of list calls: at most `limit` items (default: all) after the item with id `marker`. */
export interface PageOptions {
  limit?: number | undefined;
  marker?: string | undefined;
}

/** Operator calls on software configs. */
export interface ConfigMethods {
  /** Creates a software config (configs are immutable: change means create anew). */
  createConfig(body: SoftwareConfigCreate): Promise<SoftwareConfig>;
  /** Lists one page of config summaries (id, name, group, creation_time). */
  listConfigs(page?: PageOptions): Promise<SoftwareConfigSummary[]>;
  /** Fetches one config with its body, inputs, outputs and options. */
  getConfig(id: string): Promise<SoftwareConfig>;
  /** Deletes a config; fails with ERR_CONFIG_IN_USE while deployments use it. */
  deleteConfig(id: string): Promise<void>;
}

/** Builds the config methods on a transport. */
export function configMethods(transport: Transport): ConfigMethods {
  const { project } = transport.options;
  const path = (...rest: string[]): string => projectPath(project, 'software_configs', ...rest);
  return {
    createConfig: (body) =>
      callForField<SoftwareConfig>(transport, { method: 'POST', path: path(), auth: 'operator', json: body }, 'software_config'),
    listConfigs: (page = {}) =>
      callForField<SoftwareConfigSummary[]>(
        transport,
        { method: 'GET', path: path(), auth: 'operator', query: { limit: page.limit, marker: page.marker } },
        'software_configs',
      ),
    getConfig: (id) => callForField<SoftwareConfig>(transport, { method: 'GET', path: path(id), auth: 'operator' }, 'software_config'),
    async deleteConfig(id) {
      await transport.call({ method: 'DELETE', path: path(id), auth: 'operator' });
    },
  };
}
