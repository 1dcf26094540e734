import type {
  DerivedConfig,
  SoftwareDeployment,
  SoftwareDeploymentCreate,
  SoftwareDeploymentUpdate,
  TimelineEntry,
} from '@hearth/protocol';
import type { PageOptions } from './configs.ts';
import type { CallOptions, Transport } from './http.ts';
import { projectPath } from './paths.ts';
import { callForField, envelopeField } from './reply.ts';

/** Longest long-poll hearth-server accepts, in seconds. */
export const MAX_WAIT_SECONDS = 60;

/** Filter and paging of listDeployments. */
export interface DeploymentListOptions extends PageOptions {
  /** Only deployments to this server. Default: all. */
  serverId?: string | undefined;
}

/** A deployment as read, with the entity tag that names this state of it. */
export interface VersionedDeployment {
  deployment: SoftwareDeployment;
  etag: string | undefined;
}

/** Operator calls on software deployments. */
export interface DeploymentMethods {
  /** Creates a deployment of a config to a server (IN_PROGRESS until signalled, unless NO_SIGNAL). */
  createDeployment(body: SoftwareDeploymentCreate): Promise<SoftwareDeployment>;
  /** Lists deployments, optionally of one server. */
  listDeployments(options?: DeploymentListOptions): Promise<SoftwareDeployment[]>;
  /** Fetches one deployment; `options.signal` ends the call early. */
  getDeployment(id: string, options?: CallOptions): Promise<SoftwareDeployment>;
  /** Fetches a deployment, letting the server hold the call up to `waitSeconds` (0..60) while it is IN_PROGRESS; `options.signal` ends it early. */
  waitDeployment(id: string, waitSeconds: number, options?: CallOptions): Promise<SoftwareDeployment>;
  /** Fetches one deployment with its ETag (undefined from a server that sends none), for `updateDeployment`'s `ifMatch`. */
  readDeployment(id: string): Promise<VersionedDeployment>;
  /**
   * Updates a deployment; only the keys given are applied. With `ifMatch` (a `readDeployment` ETag)
   * it applies only if the deployment has not changed since, else ERR_DEPLOYMENT_CHANGED (412).
   */
  updateDeployment(id: string, body: SoftwareDeploymentUpdate, options?: { ifMatch?: string | undefined }): Promise<SoftwareDeployment>;
  /** Deletes a deployment. */
  deleteDeployment(id: string): Promise<void>;
  /** The derived configs a server's agent would see (Heat's deployments metadata). */
  getServerMetadata(serverId: string): Promise<DerivedConfig[]>;
  /** The timeline of a deployment (created, fetched, heartbeats, signals, result). */
  getTimeline(id: string): Promise<TimelineEntry[]>;
}

/** Checks a long-poll wait: a whole number of seconds in 0..60; throws a RangeError otherwise. */
export function checkWaitSeconds(waitSeconds: number): number {
  if (!Number.isInteger(waitSeconds) || waitSeconds < 0 || waitSeconds > MAX_WAIT_SECONDS) {
    throw new RangeError(`hearth client: wait ${String(waitSeconds)} must be a whole number of seconds from 0 to ${MAX_WAIT_SECONDS}`);
  }
  return waitSeconds;
}

/** Builds the deployment methods on a transport. */
export function deploymentMethods(transport: Transport): DeploymentMethods {
  const { project } = transport.options;
  const path = (...rest: string[]): string => projectPath(project, 'software_deployments', ...rest);
  const key = 'software_deployment';
  return {
    createDeployment: (body) =>
      callForField<SoftwareDeployment>(transport, { method: 'POST', path: path(), auth: 'operator', json: body }, key),
    listDeployments: (options = {}) =>
      callForField<SoftwareDeployment[]>(
        transport,
        {
          method: 'GET',
          path: path(),
          auth: 'operator',
          query: { server_id: options.serverId, limit: options.limit, marker: options.marker },
        },
        'software_deployments',
      ),
    getDeployment: (id, options = {}) =>
      callForField<SoftwareDeployment>(transport, { method: 'GET', path: path(id), auth: 'operator', signal: options.signal }, key),
    waitDeployment: async (id, waitSeconds, options = {}) => {
      const wait = checkWaitSeconds(waitSeconds);
      return callForField<SoftwareDeployment>(
        transport,
        { method: 'GET', path: path(id), auth: 'operator', query: { wait }, extraTimeoutMs: wait * 1000, signal: options.signal },
        key,
      );
    },
    async readDeployment(id) {
      const spec = { method: 'GET', path: path(id), auth: 'operator' } as const;
      const reply = await transport.call(spec);
      const etag = reply.headers.etag;
      return { deployment: envelopeField<SoftwareDeployment>(reply, key, spec), etag: typeof etag === 'string' ? etag : undefined };
    },
    updateDeployment: (id, body, options = {}) =>
      callForField<SoftwareDeployment>(
        transport,
        {
          method: 'PUT',
          path: path(id),
          auth: 'operator',
          json: body,
          ...(options.ifMatch === undefined ? {} : { headers: { 'if-match': options.ifMatch } }),
        },
        key,
      ),
    async deleteDeployment(id) {
      await transport.call({ method: 'DELETE', path: path(id), auth: 'operator' });
    },
    getServerMetadata: (serverId) =>
      callForField<DerivedConfig[]>(transport, { method: 'GET', path: path('metadata', serverId), auth: 'operator' }, 'metadata'),
    getTimeline: (id) =>
      callForField<TimelineEntry[]>(transport, { method: 'GET', path: path(id, 'timeline'), auth: 'operator' }, 'timeline'),
  };
}
