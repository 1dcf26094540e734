import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * The long waits of one app (long-polls, event streams). When the app starts closing they all end
 * at once and answer with what they have (a 304, the current state, the end of the stream), so an
 * agent sees a clean reply and polls again (another replica, or this one once restarted) instead
 * of a connection reset mid-wait.
 */
export class LongWaits {
  /** Each wait's `end`, until its reply has closed. */
  private readonly open = new Set<() => void>();
  private closing = false;
  private onEmpty: (() => void) | undefined;

  /** Calls `end` when the app starts closing (at once if it already has); call the result once its reply has closed. */
  add(end: () => void): () => void {
    this.open.add(end);
    if (this.closing) end();
    return () => {
      this.open.delete(end);
      if (this.open.size === 0) this.onEmpty?.();
    };
  }

  /** Ends every wait, and every wait added from now on; resolves once all their replies have closed. */
  endAll(): Promise<void> {
    this.closing = true;
    for (const end of [...this.open]) end();
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.onEmpty = resolve));
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** This app's long waits (see LongWaits); absent on apps that do not end them when closing. */
    longWaits?: LongWaits;
  }
}

/**
 * An AbortSignal that fires when the client goes away before the reply is sent, or when the app
 * starts closing: it ends long-polls and event streams.
 */
export function abortOnClose(request: FastifyRequest, reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  // The client may have gone already (while the store was read, or its credential looked up): its
  // `close` has been emitted, and waiting for it held the wait to its end, its slot of the
  // credential's long-polls, and an entry in longWaits (the app's close) for ever.
  if (reply.raw.closed) {
    controller.abort();
    return controller.signal;
  }
  const closed = request.server.longWaits?.add(() => controller.abort());
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) controller.abort();
    closed?.();
  });
  return controller.signal;
}
