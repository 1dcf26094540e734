import type { DeploymentSignal, Heartbeat, HeartbeatAck, MetadataDocument, SignalAck } from '@hearth/protocol';
import { checkWaitSeconds } from './deployments.ts';
import type { Transport } from './http.ts';
import { guestPath } from './paths.ts';

/** Conditions of getMetadata. */
export interface MetadataRequest {
  /** ETag of the document the agent already has; the server answers "not modified" while it is current. */
  etag?: string | undefined;
  /** Long-poll: seconds (0..60) the server may hold the call waiting for a change. Default: answer at once. */
  wait?: number | undefined;
}

/** What getMetadata found: a new document, or that the one the agent has is still current. */
export type MetadataResult =
  { modified: true; etag: string | undefined; document: MetadataDocument } | { modified: false; etag: string | undefined };

/** Options of signal. */
export interface SignalOptions {
  /** Sent as Idempotency-Key so a retried signal is applied once (and the call may be retried). Default: none. */
  idempotencyKey?: string | undefined;
}

/** Agent calls, authenticated with the server's credential token (Authorization: Bearer). */
export interface GuestMethods {
  /** Reads this server's metadata document (its deployments), optionally conditional and long-polled. */
  getMetadata(request?: MetadataRequest): Promise<MetadataResult>;
  /** Reports a deployment's result (deploy_stdout, deploy_stderr, deploy_status_code and outputs). */
  signal(deploymentId: string, body: DeploymentSignal, options?: SignalOptions): Promise<SignalAck>;
  /** Tells the server the deployment's hook is still working; extends its deadline. */
  heartbeat(deploymentId: string, body?: Heartbeat): Promise<HeartbeatAck>;
}

/** The ETag header of a reply, if any. */
function etagOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers.etag;
  return Array.isArray(value) ? value[0] : value;
}

/** Builds the guest methods on a transport. */
export function guestMethods(transport: Transport): GuestMethods {
  return {
    async getMetadata(request = {}) {
      const wait = request.wait === undefined ? undefined : checkWaitSeconds(request.wait);
      const headers: Record<string, string> = request.etag === undefined ? {} : { 'if-none-match': request.etag };
      const reply = await transport.call({
        method: 'GET',
        path: guestPath('metadata'),
        auth: 'agent',
        query: { wait },
        headers,
        extraTimeoutMs: (wait ?? 0) * 1000,
      });
      const etag = etagOf(reply.headers) ?? request.etag;
      if (reply.status === 304) return { modified: false, etag };
      return { modified: true, etag, document: reply.body as MetadataDocument };
    },
    async signal(deploymentId, body, options = {}) {
      const key = options.idempotencyKey;
      const reply = await transport.call({
        method: 'POST',
        path: guestPath('deployments', deploymentId, 'signal'),
        auth: 'agent',
        json: body,
        headers: key === undefined ? {} : { 'idempotency-key': key },
        retry: key !== undefined,
      });
      return reply.body as SignalAck;
    },
    async heartbeat(deploymentId, body = {}) {
      const reply = await transport.call({
        method: 'POST',
        path: guestPath('deployments', deploymentId, 'heartbeat'),
        auth: 'agent',
        json: body,
        retry: true,
      });
      return reply.body as HeartbeatAck;
    },
  };
}
