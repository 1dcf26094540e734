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
/**
 * The start of a JSON member with a string value, also inside JSON-escaped text (`"password": "`,
 * `\"password\":\"`): a server that echoes a request body back in its error (keystone, the HEAT_SIGNAL password).
 */
const JSON_MEMBER_START = /(\\{0,15})"([^"\\\n]{1,64})\1"[ \t]*:[ \t]*\1"/g;
/** Longest secret value looked at: past it (a body cut off), the rest of the value is hidden too, up to here. */
const MAX_MEMBER_VALUE = 4096;
/** A credential header a server echoed back in free text (`Authorization: Bearer <ak>:<secret>`, `X-Auth-Token: …`), also after an escaped newline. */
const CREDENTIAL_HEADER =
  /(?<=^|[^\w-]|\\[nrt])((?:proxy-)?authorization|set-cookie|cookie|x-(?:auth|subject|storage|amz-security)-token)([ \t]*:[ \t]*)((?:Bearer|Basic|AWS4-HMAC-SHA256|AWS) +)?([^\s"',;\\]+)/gi;
/** Characters that end a sentence rather than the value before them. */
const TRAILING_PUNCTUATION = /[.,;:)\]}]+$/;

/**
 * Where the string value starting at `from` ends, escaped `escapes` times over (0: plain JSON): the index of its
 * closing quote's first backslash, or undefined when it does not end within MAX_MEMBER_VALUE.
 */
function memberValueEnd(text: string, from: number, escapes: number): number | undefined {
  const limit = Math.min(text.length, from + MAX_MEMBER_VALUE);
  for (let quote = text.indexOf('"', from); quote !== -1 && quote < limit; quote = text.indexOf('"', quote + 1)) {
    let run = 0;
    while (quote - run - 1 >= from && text[quote - run - 1] === '\\') run++;
    // Each level doubles the escaped backslashes: an escaped backslash is 2(escapes+1) of them, the closing quote `escapes`.
    if (run >= escapes && (run - escapes) % (2 * escapes + 2) === 0) return quote - escapes;
  }
  return undefined;
}

/** `text` with the string values of JSON members whose names look secret replaced by REDACTED. */
function redactJsonMembers(text: string): string {
  let out = '';
  let copied = 0;
  JSON_MEMBER_START.lastIndex = 0;
  for (let match = JSON_MEMBER_START.exec(text); match !== null; match = JSON_MEMBER_START.exec(text)) {
    const valueStart = match.index + match[0].length;
    // Other members are not skipped: a value may hold JSON of its own, escaped one level deeper.
    if (!isSecretName(match[2]!)) {
      JSON_MEMBER_START.lastIndex = match.index + match[1]!.length + 1;
      continue;
    }
    const end = memberValueEnd(text, valueStart, match[1]!.length);
    if (end === valueStart) continue;
    out += text.slice(copied, valueStart) + REDACTED;
    copied = end ?? Math.min(text.length, valueStart + MAX_MEMBER_VALUE);
    JSON_MEMBER_START.lastIndex = copied;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Free text (a log message, an error message, a server's reply) safe to show: the values of secret query
 * parameters (as redactUrl hides them), URL passwords, JSON members with secret names and echoed credential
 * headers become `***`, and the text a JSON.parse error quotes is left out. Other text is returned unchanged.
 */
export function redactText(text: string): string {
  let out = text;
  if (out.includes(' is not valid JSON'))
    out = out.replace(JSON_EXCERPT, (_match, afterToken: string | undefined) => (afterToken ? ' in JSON' : 'the text is not valid JSON'));
  if (out.includes('@')) out = out.replace(URL_PASSWORD, `$1${REDACTED}@`);
  if (out.includes('"')) out = redactJsonMembers(out);
  if (out.includes(':')) out = out.replace(CREDENTIAL_HEADER, `$1$2$3${REDACTED}`);
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
