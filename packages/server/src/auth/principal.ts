import type {} from 'fastify';

/** Who is calling. */
export type Principal =
  | { kind: 'operator' }
  | { kind: 'agent'; serverId: string; projectId: string; accessKeyId: string }
  | { kind: 'capability'; deploymentId: string };

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook of the route family. */
    principal?: Principal;
  }
}
