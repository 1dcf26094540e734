import { Type, type Static } from 'typebox';

/** Any JSON value (objects, arrays, strings, numbers, booleans, null). */
export const JsonValue = Type.Unknown();

/** A JSON object with arbitrary keys. */
export const JsonObject = Type.Record(Type.String(), Type.Unknown());
export type JsonObject = Static<typeof JsonObject>;

/** A UUID in its canonical 8-4-4-4-12 hex form. */
export const Uuid = Type.String({
  pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
});

/** Identifier of a project, as it appears in `/v1/{project_id}/...` paths (not `.` or `..`: URL clients rewrite those). */
export const ProjectId = Type.String({ minLength: 1, maxLength: 64, pattern: '^(?!\\.+$)[A-Za-z0-9_.-]+$' });

/**
 * Identifier of a server (VM). Heat takes Nova's uuid here; hearth accepts any 1-64 safe
 * characters, except ids of dots only: curl and every WHATWG URL parser rewrite `/servers/..`.
 */
export const ServerId = Type.String({ minLength: 1, maxLength: 64, pattern: '^(?!\\.+$)[A-Za-z0-9_.:-]+$' });

/** A short human name (configs, deployments, servers). */
export const Name = Type.String({ maxLength: 255 });

/** Timestamps on the wire: UTC, second precision, `YYYY-MM-DDTHH:MM:SSZ`, as Heat emits them. */
export const Timestamp = Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$' });

/** Formats a Date (default: now) as Heat does: `YYYY-MM-DDTHH:MM:SSZ`. */
export function heatTime(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** Most rows one list request reads: a larger `limit` is clamped to it, so that it lists everything. */
export const MAX_LIST_LIMIT = 2 ** 31 - 1;

/**
 * `limit` of Heat's own lists (software configs and deployments): any whole number from 1, as Heat
 * sets no maximum (a limit above the count lists everything); the server clamps it to MAX_LIST_LIMIT.
 * The schema's maximum only refuses `Infinity`, which a query string's coercion would let through.
 */
export const HeatListLimit = Type.Integer({ minimum: 1, maximum: Number.MAX_VALUE });

/** The `limit` a list applies: at most MAX_LIST_LIMIT (default: none, the whole list). */
export function clampListLimit(limit: number | undefined): number | undefined {
  return limit === undefined ? undefined : Math.min(limit, MAX_LIST_LIMIT);
}

/** Paging query shared by list endpoints: `limit` (default 100, at most 1000) and `marker`. */
export const PageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
    marker: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);
