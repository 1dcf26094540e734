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
