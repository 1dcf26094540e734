import { heatTime, type Event, type EventListQuery, type EventPage } from '@hearth/protocol';
import type { Store } from '../store/store.ts';
import type { EventRow, NewEvent } from '../store/schema.ts';
import { HearthError } from './errors.ts';

/** The resource an event is about: these columns name it in the events table. */
export type EventResource = Pick<NewEvent, 'project_id' | 'resource_type' | 'resource_id' | 'server_id'>;

/**
 * An event row about one resource, written in the transaction that changed it (the resource's
 * timeline is the events with its id). `data` is stored as JSON.
 */
export function resourceEvent(
  resource: EventResource,
  type: string,
  message: string,
  data: Record<string, unknown> = {},
): Omit<NewEvent, 'time'> {
  return { ...resource, type, message, data: JSON.stringify(data) };
}

/** Turns an event row into the API shape. */
export function eventFromRow(row: EventRow): Event {
  return {
    id: Number(row.id),
    time: heatTime(new Date(row.time)),
    type: row.type,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    server_id: row.server_id,
    message: row.message,
    data: JSON.parse(row.data) as Record<string, unknown>,
  };
}

/** Parses an event cursor (the id of the last event seen; empty means the start). */
export function parseCursor(cursor: string | undefined): number {
  if (cursor === undefined || cursor === '') return 0;
  if (!/^\d{1,15}$/.test(cursor)) throw new HearthError('ERR_EVENT_CURSOR_INVALID', { cursor });
  return Number(cursor);
}

/** Reads a project's events, oldest first, after a cursor. */
export async function listEvents(store: Store, projectId: string, query: EventListQuery): Promise<EventPage> {
  const after = parseCursor(query.after);
  let select = store.reader.selectFrom('events').selectAll().where('project_id', '=', projectId).where('id', '>', after);
  if (query.resource_id) select = select.where('resource_id', '=', query.resource_id);
  if (query.type) select = select.where('type', '=', query.type);
  const rows = await select
    .orderBy('id')
    .limit(query.limit ?? 100)
    .execute();
  const events = rows.map(eventFromRow);
  return { events, next_cursor: String(events.at(-1)?.id ?? after) };
}
