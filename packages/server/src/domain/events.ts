import { heatTime, type Event, type EventListQuery, type EventPage, type TimelineEntry } from '@hearth/protocol';
import type { Transaction } from 'kysely';
import type { Store } from '../store/store.ts';
import type { Database, EventRow, NewEvent } from '../store/schema.ts';
import { topics } from '../feed/feed.ts';
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

/** How long a run of repeated events of one resource (heartbeats) is kept as one event row: 10 s from its first. */
export const REPEATED_EVENT_WINDOW_MS = 10_000;

/** What a repeated event says, given how many it stands for and when the first of them came (ISO). */
export type RepeatedEvent = (count: number, since: string) => Omit<NewEvent, 'time'>;

/**
 * Writes a repeated event (a heartbeat), at most one row per resource per REPEATED_EVENT_WINDOW_MS:
 * when the resource's latest event is one of the same type written less than that ago, that row is
 * updated to the latest (its `data.count` counts them, `data.first_time` says since when); else a
 * row is inserted. An agent heartbeating in a loop so cannot push the project's other events out
 * past the retention's count bound. Inserted here, not queued: a second heartbeat of the same write
 * batch must find the first.
 */
export async function writeRepeatedEvent(
  trx: Transaction<Database>,
  now: string,
  publish: (topic: string) => void,
  resource: Pick<NewEvent, 'project_id' | 'resource_id' | 'type'>,
  describe: RepeatedEvent,
): Promise<void> {
  const latest = await trx
    .selectFrom('events')
    .select(['id', 'type', 'time', 'data'])
    .where('resource_id', '=', resource.resource_id)
    .where('project_id', '=', resource.project_id)
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  const age = latest ? Date.parse(now) - Date.parse(latest.time) : Infinity;
  // A clock stepped back (age below 0) starts a new row rather than hide heartbeats in an old one.
  if (latest && latest.type === resource.type && age >= 0 && age < REPEATED_EVENT_WINDOW_MS) {
    const count = Number((JSON.parse(latest.data) as { count?: unknown }).count ?? 1) + 1;
    const { message, data } = describe(count, latest.time);
    await trx.updateTable('events').set({ message, data }).where('id', '=', latest.id).execute();
    return;
  }
  await trx
    .insertInto('events')
    .values({ ...describe(1, now), time: now })
    .execute();
  publish(topics.projectEvents(resource.project_id));
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
  const limit = query.limit ?? 100;
  // A filtered reader passes over the events that do not match: read before the page (an event
  // committed in between has a higher id), the newest id is where a short page leaves it. Left at its
  // last match, it would fall below what the retention deleted and be refused (ERR_EVENT_CURSOR_EXPIRED)
  // though nothing it asked for was lost.
  const filtered = Boolean(query.resource_id || query.type);
  const newestBefore = filtered ? await newestEventId(store, projectId) : undefined;
  let select = store.reader.selectFrom('events').selectAll().where('project_id', '=', projectId).where('id', '>', after);
  if (query.resource_id) select = select.where('resource_id', '=', query.resource_id);
  if (query.type) select = select.where('type', '=', query.type);
  const rows = await select.orderBy('id').limit(limit).execute();
  // Checked after the read: a purge that deleted any of the rows this page skipped committed its
  // mark with them, so the mark is seen here even if the purge ran between the two queries.
  await assertCursorKept(store, projectId, after);
  const events = rows.map(eventFromRow);
  const lastId = events.at(-1)?.id;
  if (newestBefore !== undefined && events.length < limit) {
    return { events, next_cursor: String(Math.max(lastId ?? 0, newestBefore)) };
  }
  if (lastId !== undefined) return { events, next_cursor: String(lastId) };
  return { events, next_cursor: String(Math.min(after, await newestEventId(store, projectId))) };
}

/** The highest id of the project's events the retention deleted (0 if none), the oldest cursor that misses nothing. */
export async function prunedThrough(store: Store, projectId: string): Promise<number> {
  const row = await store.reader.selectFrom('events_pruned').select('through_id').where('project_id', '=', projectId).executeTakeFirst();
  return Number(row?.through_id ?? 0);
}

/**
 * Throws ERR_EVENT_CURSOR_EXPIRED (410) when events after `after` were deleted by the retention: the
 * reader would get the later ones as if nothing were missing. No cursor (0) asks for what is kept.
 */
async function assertCursorKept(store: Store, projectId: string, after: number): Promise<void> {
  if (after === 0) return;
  const through = await prunedThrough(store, projectId);
  if (after < through) throw new HearthError('ERR_EVENT_CURSOR_EXPIRED', { cursor: String(after), oldest_cursor: String(through) });
}

/**
 * The id of the project's newest event (0 if none). A cursor beyond it was not issued by this log
 * (a restored or reset database, another project's cursor): echoed back it would skip every event
 * until the ids caught up, so pages and streams continue from here instead.
 */
async function newestEventId(store: Store, projectId: string): Promise<number> {
  const row = await store.reader
    .selectFrom('events')
    .select((eb) => eb.fn.max('id').as('newest'))
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  return Number(row?.newest ?? 0);
}

/** The most events of the repeated type (heartbeats) a timeline shows: the latest ones. */
export const TIMELINE_REPEATED_LIMIT = 100;
/** The most other events a timeline shows: the latest ones. */
export const TIMELINE_OTHER_LIMIT = 1000;

type Part = { rows: EventRow[]; omitted: (TimelineEntry & { id: number }) | undefined };

/**
 * A resource's timeline: its events, oldest first, bounded. An agent heartbeating for days writes
 * many thousands of `repeatedType` events; only the latest of them are shown, so the timeline stays
 * small and always ends with what happened last (signalled, completed, timed out). What is left
 * out is one entry in its place that says how much and where to page through it.
 */
export async function resourceTimeline(
  store: Store,
  projectId: string,
  resourceId: string,
  repeatedType: string,
): Promise<TimelineEntry[]> {
  const latest = async (repeated: boolean, limit: number): Promise<Part> => {
    const ofResource = store.reader
      .selectFrom('events')
      .where('resource_id', '=', resourceId)
      .where('project_id', '=', projectId)
      .where('type', repeated ? '=' : '<>', repeatedType);
    const rows = (await ofResource.selectAll().orderBy('id', 'desc').limit(limit).execute()).reverse();
    if (rows.length < limit) return { rows, omitted: undefined };
    const left = await ofResource
      .select((eb) => [
        eb.fn.countAll<number>().as('count'),
        eb.fn.max('id').as('last_id'),
        eb.fn.min('time').as('first'),
        eb.fn.max('time').as('last'),
      ])
      .where('id', '<', rows[0]!.id)
      .executeTakeFirstOrThrow();
    const count = Number(left.count);
    if (count === 0) return { rows, omitted: undefined };
    const [first, last] = [heatTime(new Date(left.first)), heatTime(new Date(left.last))];
    const what = repeated ? `${repeatedType} events` : `events other than ${repeatedType}`;
    const typeQuery = repeated ? `&type=${encodeURIComponent(repeatedType)}` : '';
    return {
      rows,
      omitted: {
        id: Number(left.last_id),
        time: last,
        type: 'timeline.omitted',
        message: `${count} earlier ${what} (${first} to ${last}) are left out; list them with GET /v1/${projectId}/events?resource_id=${resourceId}${typeQuery}`,
        data: { type: repeated ? repeatedType : null, count, first_time: first, last_time: last },
      },
    };
  };
  const parts = [await latest(false, TIMELINE_OTHER_LIMIT), await latest(true, TIMELINE_REPEATED_LIMIT)];
  const entries = parts.flatMap(({ rows, omitted }) => [
    ...rows.map((row) => ({
      id: Number(row.id),
      time: heatTime(new Date(row.time)),
      type: row.type,
      message: row.message,
      data: JSON.parse(row.data) as Record<string, unknown>,
    })),
    ...(omitted ? [omitted] : []),
  ]);
  return entries.sort((a, b) => a.id - b.id).map(({ id: _id, ...entry }) => entry);
}
