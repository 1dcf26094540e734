import { Type, type Static } from 'typebox';
import { JsonObject, Timestamp } from './common.ts';

/** Kinds of event; every state change writes one in the same transaction. */
export const EVENT_TYPES = [
  'server.created',
  'server.deleted',
  'config.created',
  'config.deleted',
  'deployment.created',
  'deployment.updated',
  'deployment.deleted',
  'deployment.fetched',
  'deployment.heartbeat',
  'deployment.signalled',
  'deployment.completed',
  'deployment.failed',
  'deployment.timed_out',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** An event as listed by GET /v1/{project}/events and streamed by /events/stream. */
export const Event = Type.Object({
  id: Type.Integer(),
  time: Timestamp,
  type: Type.String(),
  resource_type: Type.String(),
  resource_id: Type.String(),
  server_id: Type.Union([Type.String(), Type.Null()]),
  message: Type.String(),
  data: JsonObject,
});
export type Event = Static<typeof Event>;

/** GET /events query: `after` is the cursor (an event id); `resource_id` filters. */
export const EventListQuery = Type.Object(
  {
    after: Type.Optional(Type.String({ maxLength: 32 })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    resource_id: Type.Optional(Type.String({ maxLength: 64 })),
    type: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type EventListQuery = Static<typeof EventListQuery>;

/** A page of events, oldest first; `next_cursor` continues after the last one. */
export const EventPage = Type.Object({ events: Type.Array(Event), next_cursor: Type.String() });
export type EventPage = Static<typeof EventPage>;

/** One line of a deployment's timeline. */
export const TimelineEntry = Type.Object({
  time: Timestamp,
  type: Type.String(),
  message: Type.String(),
  data: JsonObject,
});
export type TimelineEntry = Static<typeof TimelineEntry>;
