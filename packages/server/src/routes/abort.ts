import type { FastifyReply, FastifyRequest } from 'fastify';

/** An AbortSignal that fires when the client goes away before the reply is sent (ends long-polls). */
export function abortOnClose(_request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) controller.abort();
  });
  return controller.signal;
}
