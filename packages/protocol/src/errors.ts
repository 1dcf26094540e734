import { Type, type Static } from 'typebox';

/**
 * The one catalogue of coded errors. Each entry: HTTP status and a message template that says
 * what was wrong and what to do. `{name}` placeholders are filled from the error's details.
 */
export const ERRORS = {
  ERR_AUTH_MISSING: {
    status: 401,
    message: 'No credential given: send X-Auth-Token (operator) or Authorization: Bearer <access key>:<secret> (agent).',
  },
  ERR_AUTH_INVALID: {
    status: 401,
    message:
      'The credential is not valid, or was revoked with what it was issued for (a server, a deployment action, a wait condition): check it or get a new one.',
  },
  ERR_AUTH_FORBIDDEN: { status: 403, message: 'This credential may not do that: {reason}.' },
  ERR_PROJECT_NOT_FOUND: { status: 404, message: 'Project {project} does not exist.' },
  ERR_REQUEST_INVALID: { status: 400, message: 'The request is not valid: {reason}.' },
  ERR_REQUEST_BODY_TOO_LARGE: { status: 413, message: 'The request body is larger than the {limit} bytes this endpoint accepts.' },
  ERR_REQUEST_BODY_MALFORMED: { status: 400, message: 'The request body is not valid JSON: {reason}.' },
  ERR_REQUEST_MEDIA_TYPE: { status: 415, message: 'Content-Type {type} is not accepted here: send application/json.' },
  ERR_REQUEST_HEADERS_TOO_LARGE: {
    status: 431,
    message: 'The request headers are larger than the {limit} bytes hearth-server reads: send fewer or shorter headers.',
  },
  ERR_REQUEST_TIMEOUT: {
    status: 408,
    message: 'The request headers did not arrive within {headers_seconds} s: send the request again.',
  },
  ERR_ROUTE_NOT_FOUND: { status: 404, message: 'No such endpoint: {method} {path}. See /docs for the API.' },
  ERR_METHOD_NOT_ALLOWED: { status: 405, message: 'Method {method} is not allowed on {path}.' },
  ERR_SERVER_NOT_FOUND: { status: 404, message: 'Server {id} does not exist in this project.' },
  ERR_SERVER_EXISTS: { status: 409, message: 'A server with id {id} is already registered.' },
  ERR_CONFIG_NOT_FOUND: { status: 404, message: 'Software config {id} does not exist in this project.' },
  ERR_CONFIG_IN_USE: { status: 409, message: 'Software config {id} is used by {count} deployment(s); delete them first.' },
  ERR_CONFIG_INVALID: { status: 400, message: 'The software config is not valid: {reason}.' },
  ERR_DEPLOYMENT_NOT_FOUND: { status: 404, message: 'Software deployment {id} does not exist.' },
  ERR_DEPLOYMENT_INVALID: { status: 400, message: 'The software deployment is not valid: {reason}.' },
  ERR_DEPLOYMENT_CHANGED: {
    status: 412,
    message: 'Software deployment {id} has changed since it was read (If-Match {if_match} is not its ETag): read it again and retry.',
  },
  ERR_DEPLOYMENT_NOT_IN_PROGRESS: {
    status: 409,
    message: 'Deployment {id} is {status}, not IN_PROGRESS: the signal was not applied. Update the deployment to start a new action first.',
  },
  ERR_SIGNAL_INVALID: { status: 400, message: 'The signal is not valid: {reason}.' },
  ERR_SIGNAL_STALE: {
    status: 409,
    message:
      'This signal URL was issued for an earlier action ({action}) of deployment {id}, which has started a new one since: the signal or heartbeat was not applied.',
  },
  ERR_STACK_NOT_FOUND: { status: 404, message: 'Stack {stack} does not exist in this project.' },
  ERR_STACK_EXISTS: { status: 409, message: 'A stack named {name} already exists in this project.' },
  ERR_STACK_NOT_EMPTY: {
    status: 409,
    message: 'Stack {stack} still has {count} server(s), deployment(s) or scaling group(s); delete them first.',
  },
  ERR_RESOURCE_EXISTS: { status: 409, message: 'Stack {stack} already has a resource named {name}: pick another name.' },
  ERR_RESOURCE_NOT_FOUND: { status: 404, message: 'Resource {name} does not exist in stack {stack}.' },
  ERR_RESOURCE_SIGNAL_UNSUPPORTED: { status: 400, message: 'Resource {name} is a {kind} and takes no signals.' },
  ERR_WAIT_CONDITION_NOT_FOUND: { status: 404, message: 'Wait condition {name} does not exist in stack {stack}.' },
  ERR_WAIT_CONDITION_DONE: {
    status: 409,
    message: 'Wait condition {name} is already {status}: the signal was not applied. Create a new wait condition to wait again.',
  },
  ERR_SCALING_GROUP_NOT_FOUND: { status: 404, message: 'Scaling group {name} does not exist in stack {stack}.' },
  ERR_SCALING_GROUP_INVALID: { status: 400, message: 'The scaling group is not valid: {reason}.' },
  ERR_SCALING_GROUP_HAS_POLICIES: {
    status: 409,
    message: 'Scaling group {name} still has {count} scaling polic(ies): delete them first (their alarm URLs stop working).',
  },
  ERR_SCALING_POLICY_NOT_FOUND: { status: 404, message: 'Scaling policy {name} does not exist in stack {stack}.' },
  ERR_SCALING_POLICY_INVALID: { status: 400, message: 'The scaling policy is not valid: {reason}.' },
  ERR_ALARM_NOT_FOUND: { status: 404, message: 'Alarm {name} does not exist in this project.' },
  ERR_ALARM_EXISTS: { status: 409, message: 'An alarm named {name} already exists in this project: pick another name or delete it first.' },
  ERR_ALARM_INVALID: { status: 400, message: 'The alarm is not valid: {reason}.' },
  ERR_METRIC_INVALID: { status: 400, message: 'The metric data is not valid: {reason}.' },
  ERR_SIGNED_URL_INVALID: { status: 403, message: 'The signed URL or signature is not valid: {reason}.' },
  ERR_SIGNATURE_INCOMPLETE: { status: 400, message: 'The request is not signed as EC2 signatures must be: {reason}.' },
  ERR_SIGNED_URL_EXPIRED: { status: 403, message: 'The signed URL expired at {expired_at}: ask the operator for a new one.' },
  ERR_EVENT_CURSOR_INVALID: { status: 400, message: 'The event cursor {cursor} is not valid: pass the next_cursor of a previous page.' },
  ERR_EVENT_CURSOR_EXPIRED: {
    status: 410,
    message:
      'Events after cursor {cursor} were deleted by the events retention: start again from cursor {oldest_cursor}; the events up to it are gone.',
  },
  ERR_STORE_UNAVAILABLE: { status: 503, message: 'The database is not available right now; try again shortly.' },
  ERR_STORE_FULL: {
    status: 507,
    message: "The disk holding hearth-server's database is full: nothing was changed. Free space on it; writes work again at once.",
  },
  ERR_SERVER_SHUTTING_DOWN: { status: 503, message: 'hearth-server is shutting down; try again on another replica or shortly.' },
  ERR_RATE_LIMITED: { status: 429, message: 'Too many requests; retry after {retry_after} s.' },
  ERR_INTERNAL: { status: 500, message: 'Internal error {request_id}; the server log has the details.' },
} as const satisfies Record<string, { status: number; message: string }>;

/** A code from the catalogue. */
export type ErrorCode = keyof typeof ERRORS;

/**
 * Coded error body returned for every 4xx/5xx of the native and guest APIs. The outer shape is
 * Heat's (`code`, `title`, `explanation`, `error.type`, `error.message`), so python-heatclient
 * shows the message; `error.code` carries hearth's catalogue code.
 */
export const ErrorBody = Type.Object({
  code: Type.Integer(),
  title: Type.String(),
  explanation: Type.String(),
  error: Type.Object({
    code: Type.String(),
    type: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
});
export type ErrorBody = Static<typeof ErrorBody>;

/**
 * The `event:` of the last message of an event stream (GET /events/stream) that ends on a coded error
 * (ERR_EVENT_CURSOR_EXPIRED: the reader fell behind the events retention); its data is an ErrorBody.
 */
export const EVENT_STREAM_ERROR = 'hearth.error';

/** Fills `{name}` placeholders of a catalogue message from details. */
export function formatErrorMessage(code: ErrorCode, details: Record<string, unknown> = {}): string {
  return ERRORS[code].message.replace(/\{(\w+)\}/g, (_m, key: string) => {
    const value = details[key];
    if (value === undefined) return `{${key}}`;
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}
