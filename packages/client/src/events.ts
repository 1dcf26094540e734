import type { Event, EventListQuery, EventPage } from '@hearth/protocol';
import { streamEvents, type EventStreamOptions } from './event-stream.ts';
import type { Transport } from './http.ts';
import { projectPath } from './paths.ts';

/** Operator calls on the project's event log. */
export interface EventMethods {
  /** Lists one page of events, oldest first; pass `next_cursor` as `after` to continue. */
  listEvents(query?: EventListQuery): Promise<EventPage>;
  /** Follows events live (server-sent events), reconnecting from the last one seen. */
  streamEvents(options?: EventStreamOptions): AsyncGenerator<Event>;
}

/** Builds the event methods on a transport. */
export function eventMethods(transport: Transport): EventMethods {
  const { project } = transport.options;
  return {
    async listEvents(query = {}) {
      const reply = await transport.call({
        method: 'GET',
        path: projectPath(project, 'events'),
        auth: 'operator',
        query: { after: query.after, limit: query.limit, resource_id: query.resource_id, type: query.type },
      });
      return reply.body as EventPage;
    },
    streamEvents: (options) => streamEvents(transport, options),
  };
}
