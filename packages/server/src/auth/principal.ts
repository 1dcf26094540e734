import type {} from 'fastify';

/** Who is calling. */
export type Principal =
  | { kind: 'operator' }
  | { kind: 'agent'; serverId: string; projectId: string; accessKeyId: string }
  /** A signal URL's capability; `action` is the derived config id of the action it was issued for. */
  | { kind: 'capability'; deploymentId: string; action?: string };

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook of the route family. */
    principal?: Principal;
  }
}
