/**
 * Query parameters whose values are secrets, lower-cased. Names are compared decoded and without
 * regard to case: the signature checks read `Signature`, `AWSAccessKeyId` and the rest by their exact
 * names, but a log must not show a secret because its name was spelled `Signatur%65` or `SIGNATURE`.
 */
const SECRET_NAMES = new Set([
  'token',
  'signature',
  'x-amz-signature',
  'awsaccesskeyid',
  'x-amz-credential',
  'x-amz-security-token',
  'temp_url_sig',
]);

/** Where a name may begin inside one `&`-separated piece of a query: after `;`, `?` or `#` as well as at its start. */
const INNER_START = /[;?#]/g;

/** A user and password before the host of an absolute URL (`http://user:pass@host/`), up to the `@` that ends them. */
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i;

/**
 * A URL with the values of its secret query parameters replaced by `***`, fit for logs. A name counts
 * as secret once percent-decoded (`+` as a space), as fastify's query parser reads it; a name that does
 * not decode counts as secret. The query starts at the first `?` or `#` (where fastify's router cuts
 * the path); a piece whose name is secret is hidden up to the next `&`. A request line may carry an
 * absolute URL (`GET http://user:pass@host/path`, which Node and fastify serve): its user and password
 * are hidden as `***@`.
 */
export function redactUrl(rawUrl: string): string {
  const url = rawUrl.replace(USERINFO, '$1***@');
  const start = url.search(/[?#]/);
  if (start === -1) return url;
  const pieces = url
    .slice(start + 1)
    .split('&')
    .map(redactPiece);
  return `${url.slice(0, start + 1)}${pieces.join('&')}`;
}

/** One `name=value` piece of a query, its value hidden when a secret name begins at its start or after `;`, `?` or `#`. */
function redactPiece(piece: string): string {
  const starts = [0, ...Array.from(piece.matchAll(INNER_START), (match) => match.index + 1)];
  for (const nameStart of starts) {
    const equals = piece.indexOf('=', nameStart);
    if (equals === -1) return piece;
    if (isSecretName(piece.slice(nameStart, equals))) return `${piece.slice(0, equals + 1)}***`;
  }
  return piece;
}

function isSecretName(rawName: string): boolean {
  try {
    // `Signature[]` or `token[0]` (array spellings some clients send) hide their value too.
    const name = decodeURIComponent(rawName.replaceAll('+', ' '))
      .toLowerCase()
      .trim()
      .replace(/\[[^\]]*\]$/, '');
    return SECRET_NAMES.has(name);
  } catch {
    return true;
  }
}

/**
 * The fields of an error a log line keeps besides its type, message and stack: those that say which
 * failure it was (errno, SQLSTATE, PostgreSQL's routine and constraint names). Not the others: node-postgres
 * attaches the whole `client` to a pool error (its connection parameters and the backend's cancel key),
 * and a PostgreSQL error's `detail` quotes the row it refused ("Failing row contains (...)": a config
 * body, deployment inputs, a signal's outputs) or the key it found twice.
 */
const LOGGED_ERROR_FIELDS = [
  'code',
  'errno',
  'syscall',
  'address',
  'port',
  'statusCode',
  'severity',
  'routine',
  'schema',
  'table',
  'column',
  'dataType',
  'constraint',
] as const;

/** How deep `cause` and AggregateError chains are followed (a cause may point back at its error). */
const MAX_ERROR_DEPTH = 5;

/** An error as a log line shows it. */
export interface LoggedError {
  type: string;
  message: string;
  stack: string;
  [field: string]: unknown;
}

/**
 * pino's `err` serializer for hearth-server: an error as type, message, stack, the fields in
 * LOGGED_ERROR_FIELDS, its `cause` and an AggregateError's `errors`, the same way; anything else
 * it carries is left out. A value that is not an error is logged as it is.
 */
export function errorForLog(error: Error): LoggedError {
  return loggedValue(error, 0) as LoggedError;
}

function loggedValue(value: unknown, depth: number): unknown {
  // Error-like as pino reads it: an error copied across threads or made by a library may not be an Error.
  if (typeof value !== 'object' || value === null || typeof (value as { message?: unknown }).message !== 'string') return value;
  const source = value as Record<string, unknown> & { message: string };
  const logged: LoggedError = {
    type: value instanceof Error ? value.constructor.name || value.name : typeof source.name === 'string' ? source.name : 'Error',
    message: source.message,
    stack: typeof source.stack === 'string' ? source.stack : '',
  };
  for (const field of LOGGED_ERROR_FIELDS) {
    const fieldValue = source[field];
    if (typeof fieldValue === 'string' || typeof fieldValue === 'number') logged[field] = fieldValue;
  }
  if (depth < MAX_ERROR_DEPTH) {
    if (source.cause !== undefined) logged.cause = loggedValue(source.cause, depth + 1);
    if (Array.isArray(source.errors)) logged.errors = source.errors.map((inner: unknown) => loggedValue(inner, depth + 1));
  }
  return logged;
}
