/** What a secret value is replaced with in logs and error messages. */
export const REDACTED = '***';

/** Names that hold secrets: *password*, *secret*, *token*, *authorization*, *cookie*, and *signature / *_sig at the end (not SignatureMethod). */
const SECRET_WORDS = /password|passwd|secret|token|authorization|cookie|signature$|(^|[_-])sig$/i;
/** `*_key` / `*-key` (private_key, secret_access_key) and camelCase `*Key` (secretKey). */
const KEY_SUFFIX = /(?:[_-][kK][eE][yY]|[a-z0-9]Key)$/;

/** Whether a field, header or query parameter with this name holds a secret whose value must not be shown. */
export function isSecretName(name: string): boolean {
  return SECRET_WORDS.test(name) || KEY_SUFFIX.test(name);
}

/**
 * A URL safe to show: the values of query parameters with secret names (Signature, temp_url_sig, token...)
 * and any userinfo password become `***`. A string that is no URL loses everything after `?`.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    const query = url.indexOf('?');
    return query === -1 ? url : `${url.slice(0, query)}?${REDACTED}`;
  }
  if (parsed.password) parsed.password = REDACTED;
  if (parsed.search === '') return parsed.href;
  const pairs = parsed.search
    .slice(1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const rawName = equals === -1 ? pair : pair.slice(0, equals);
      let name = rawName;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        // A malformed escape: judge the raw name.
      }
      return equals !== -1 && isSecretName(name) ? `${rawName}=${REDACTED}` : pair;
    });
  parsed.search = '';
  return `${parsed.href.replace(/#.*$/, '')}?${pairs.join('&')}${parsed.hash}`;
}

/**
 * The excerpt V8 quotes in JSON.parse errors (`Unexpected token 'x', ..."pw": S3cre"... is not valid JSON`):
 * a short text whole, else 10 characters either side of the mistake, so a secret in a malformed file or
 * reply would be logged. Python's json never quotes it. Bounded, so a long text costs linear time.
 */
const JSON_EXCERPT = /(, )?(?:\.\.\.)?"[\s\S]{0,64}?"(?:\.\.\.)? is not valid JSON/g;
/** A userinfo password in a URL inside free text. */
const URL_PASSWORD = /(\bhttps?:\/\/[^\s/?#@:"'<>]*:)[^\s/?#@"'<>]+@/gi;
/** A query parameter inside free text: a full URL, or a request line or path a server echoed back. */
const QUERY_PAIR = /([?&])([^=&?#\s"'<>]+)=([^&#\s"'<>]*)/g;
/** Characters that end a sentence rather than the value before them. */
const TRAILING_PUNCTUATION = /[.,;:)\]}]+$/;

/**
 * Free text (a log message, an error message, a server's reply) safe to show: the values of secret query
 * parameters (as redactUrl hides them) and URL passwords become `***`, and the text a JSON.parse error quotes
 * is left out. Other text is returned unchanged.
 */
export function redactText(text: string): string {
  let out = text;
  if (out.includes(' is not valid JSON'))
    out = out.replace(JSON_EXCERPT, (_match, afterToken: string | undefined) => (afterToken ? ' in JSON' : 'the text is not valid JSON'));
  if (out.includes('@')) out = out.replace(URL_PASSWORD, `$1${REDACTED}@`);
  if (!out.includes('=')) return out;
  return out.replace(QUERY_PAIR, (match, separator: string, rawName: string, value: string) => {
    let name = rawName;
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, ' '));
    } catch {
      // A malformed escape: judge the raw name.
    }
    if (!isSecretName(name) || value === '' || value === REDACTED) return match;
    return `${separator}${rawName}=${REDACTED}${TRAILING_PUNCTUATION.exec(value)?.[0] ?? ''}`;
  });
}
