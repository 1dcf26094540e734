/** PostgreSQL SQLSTATEs that mean "the database is not there right now", not "this request is wrong". */
const UNAVAILABLE_SQLSTATES = new Set([
  '57P01', // admin_shutdown (the server is restarting)
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now (starting up, in recovery)
  '53300', // too_many_connections
  '55P03', // lock_not_available
  '57014', // query_canceled (statement timeout)
  '25P03', // idle_in_transaction_session_timeout: the session was ended, its transaction rolled back
  // read_only_sql_transaction: the database takes no writes (a standby after a switchover, or made
  // read-only for maintenance). hearth never opens a read-only transaction itself, so it is never
  // the request's fault; the connection is dropped, so the next one may reach the new primary.
  '25006',
]);

/** Socket errors of a connection that could not be made or was lost. */
const UNAVAILABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** node-postgres and pg-pool messages for a lost or unobtainable connection. */
const UNAVAILABLE_MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /Client has encountered a connection error and is not queryable/,
  /Query read timeout/,
  /Cannot use a pool after calling end/,
  /is not currently accepting connections/, // 55000 after ALTER DATABASE ... ALLOW_CONNECTIONS false
];

/**
 * Whether an error means the database is unavailable (an outage, a restart, a lost connection),
 * which a client should retry (503), as opposed to a bug (500). SQLite's SQLITE_BUSY (the file is
 * locked longer than busy_timeout) counts as unavailable too.
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    if (code.startsWith('08') && code.length === 5) return true; // connection_exception class
    // A new connection refused: the role may not log in or its password changed (class 28), or the
    // database was dropped or renamed (3D000). Not the request's fault: a 503 (and /readyz 503),
    // with the reason in the log, rather than a 500.
    if ((code.startsWith('28') && code.length === 5) || code === '3D000') return true;
    if (UNAVAILABLE_SQLSTATES.has(code) || UNAVAILABLE_ERRNOS.has(code)) return true;
    if (code === 'SQLITE_BUSY') return true;
  }
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  // AggregateError (a failed connect to several addresses) and wrapped causes.
  const inner = (error as { errors?: unknown; cause?: unknown }).errors;
  if (Array.isArray(inner) && inner.some(isStoreUnavailable)) return true;
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isStoreUnavailable(cause);
}

/**
 * Whether the database could not write because its disk (or its quota) is full: SQLite's
 * SQLITE_FULL, PostgreSQL's disk_full (53100). A 507 that says so, not a 500: the operator must free
 * space, and an agent retries (its signal was not committed).
 */
export function isStoreFull(error: unknown): boolean {
  const code = sqlState(error);
  if (code === 'SQLITE_FULL' || code === '53100') return true;
  const cause = typeof error === 'object' && error !== null ? (error as { cause?: unknown }).cause : undefined;
  return cause !== undefined && cause !== error && isStoreFull(cause);
}

/**
 * Whether PostgreSQL refused a value longer than its column (SQLSTATE 22001). Request schemas cap
 * what clients send; this is the safety net that keeps a missed cap a 400, not a 500.
 */
export function isValueTooLong(error: unknown): boolean {
  return sqlState(error) === '22001';
}

/**
 * Whether PostgreSQL refused a text value it cannot hold: a NUL character (SQLSTATE 22021, or
 * 22P05 "unsupported Unicode escape sequence" for `\u0000` in JSON). SQLite stores these; they
 * are a 400 on PostgreSQL, never a 500.
 */
export function isUnstorableText(error: unknown): boolean {
  const state = sqlState(error);
  return state === '22021' || state === '22P05';
}

function sqlState(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
}
