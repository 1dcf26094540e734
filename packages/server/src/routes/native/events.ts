import { Type } from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { EVENT_STREAM_ERROR, EventListQuery, ProjectId } from '@hearth/protocol';
import type { Services } from '../../services.ts';
import { listEvents, parseCursor } from '../../domain/events.ts';
import { isHearthError } from '../../domain/errors.ts';
import { errorBody } from '../../app-errors.ts';
import { topics, waitForChange } from '../../feed/feed.ts';
import { abortOnClose } from '../abort.ts';
import { drained } from '../stream-drain.ts';

const Params = Type.Object({ project_id: ProjectId });
const StreamQuery = Type.Object(
  { after: Type.Optional(Type.String({ maxLength: 32 })), resource_id: Type.Optional(Type.String({ maxLength: 64 })) },
  { additionalProperties: false },
);
const KEEPALIVE_MS = 15_000;
/** Events read and written per turn of a stream: the most a slow client makes the server hold. */
const PAGE = 500;

/** How long a stream waits for a client that takes none of what it was sent before it cuts it off. */
export const STREAM_STALL_MS = 60_000;

/** /v1/{project}/events: a cursor-paged list and a server-sent-events stream. */
export const eventRoutes: FastifyPluginAsyncTypebox<{
  services: Services;
  /** How long a stream's client may take none of what it was sent before it is cut off (default STREAM_STALL_MS). */
  streamStallMs?: number;
}> = async (app, { services, streamStallMs = STREAM_STALL_MS }) => {
  app.get('/events', { schema: { tags: ['events'], params: Params, querystring: EventListQuery } }, async (request) =>
    listEvents(services.store, request.params.project_id, request.query),
  );

  app.get('/events/stream', { schema: { tags: ['events'], params: Params, querystring: StreamQuery } }, async (request, reply) => {
    const projectId = request.params.project_id;
    // An EventSource reconnects to the same URL (its original ?after) with the id of the last event
    // it got as Last-Event-ID: that is the newer of the two, and resuming from ?after would replay.
    const lastEventId = request.headers['last-event-id']?.toString();
    let cursor = String(parseCursor(lastEventId || request.query.after));
    // HEAD (fastify answers it with this GET route): the headers only, not a stream that never sends them.
    if (request.method === 'HEAD') return reply.header('content-type', 'text/event-stream').header('cache-control', 'no-cache').send();
    const nextPage = () => listEvents(services.store, projectId, { after: cursor, limit: PAGE, resource_id: request.query.resource_id });
    // Read before answering: a database that is down is a coded 503 the client backs off from, not a
    // 200 stream that ends at once (which a client takes for a healthy server and reconnects to at once).
    let page = await nextPage();
    const abort = abortOnClose(request, reply);
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    const out = reply.raw;
    // A client that reads slower than the events come makes the stream wait here, holding at most
    // the high-water mark and the rest of one page: without the wait the loop would queue the whole
    // backlog (every stream its own copy). One that reads nothing is cut off: it would hold that
    // page and its connection for ever. False when the stream is to end.
    const send = async (text: string): Promise<boolean> => {
      if (out.write(text)) return !abort.aborted;
      const flushed = await drained(out, out.socket, abort, streamStallMs);
      if (flushed === 'stalled') {
        request.log.warn(
          { project: projectId, unsentBytes: out.writableLength, stalledMs: streamStallMs },
          `event stream cut off: its client took nothing of the last ${out.writableLength} bytes for ${streamStallMs / 1000} s (it resumes with Last-Event-ID)`,
        );
      }
      return flushed === 'drained';
    };
    try {
      let open = await send(': hearth events\n\n');
      while (open && !abort.aborted) {
        for (const event of page.events) {
          open = await send(`id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
          if (!open) break;
        }
        if (!open) break;
        const reached = page.events.length === 0 ? cursor : String(page.events.at(-1)!.id);
        if (page.next_cursor !== reached) {
          // An id without data fires no event but is where the client resumes from after a reconnect:
          // back at the newest event, or (?resource_id) past events of other resources.
          const why =
            Number(page.next_cursor) < Number(reached)
              ? `cursor ${reached} is beyond the newest event; following from ${page.next_cursor}`
              : `no other events of ${request.query.resource_id} through ${page.next_cursor}`;
          open = await send(`: ${why}\nid: ${page.next_cursor}\n\n`);
          if (!open) break;
        }
        cursor = page.next_cursor;
        if (page.events.length < PAGE) {
          const changed = await waitForChange(services.feed, [topics.projectEvents(projectId)], KEEPALIVE_MS, abort);
          if (abort.aborted) break;
          if (!changed) open = await send(': keepalive\n\n');
          if (!open) break;
        }
        try {
          page = await nextPage();
        } catch (error) {
          // A coded 4xx (the retention deleted events this slow reader had not got: ERR_EVENT_CURSOR_EXPIRED)
          // is the same for every reconnect: said as the stream's last message, in the REST error's shape.
          if (!isHearthError(error) || error.statusCode >= 500) throw error;
          await send(`event: ${EVENT_STREAM_ERROR}\ndata: ${JSON.stringify(errorBody(error))}\n\n`);
          break;
        }
      }
    } finally {
      // A client that stopped reading would keep an ended stream (and the app's close) waiting.
      if (out.writableNeedDrain) out.destroy();
      else out.end();
    }
  });
};
