import type {} from 'fastify';

/** Who is calling. */
export type Principal =
  | { kind: 'operator' }
  | { kind: 'agent'; serverId: string; projectId: string; accessKeyId: string }
  /**
   * A signal URL's capability; `action` is the derived config id of the action it was issued for.
   * `key`, for a `?token=` URL only: the deployment's access key the token is bound to (null: none).
   */
  | { kind: 'capability'; deploymentId: string; action?: string; key?: string | null };

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook of the route family. */
    principal?: Principal;
  }
}
