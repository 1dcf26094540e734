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

/**
 * A URL with the values of its secret query parameters replaced by `***`, fit for logs. A name counts
 * as secret once percent-decoded (`+` as a space), as fastify's query parser reads it; a name that does
 * not decode counts as secret. The query starts at the first `?` or `#` (where fastify's router cuts
 * the path); a piece whose name is secret is hidden up to the next `&`.
 */
export function redactUrl(url: string): string {
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
