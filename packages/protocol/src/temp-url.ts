import { createHmac } from 'node:crypto';
import { secretsEqual } from './constant-time.ts';

/** What a Swift temp URL signs. */
export interface TempUrlSignOptions {
  method: 'GET' | 'PUT' | 'HEAD';
  /** The object path as the request will carry it, e.g. `/v1/AUTH_project/container/object`. */
  path: string;
  /** Expiry, unix seconds. */
  expires: number;
  /** The account or container temp-URL key. */
  key: string;
}

/** A request presenting a temp URL. */
export interface TempUrlVerifyOptions {
  /** The request method; HEAD is allowed with a GET or PUT signature, as Swift does. */
  method: string;
  /** The object path, the same string that was signed. */
  path: string;
  /** The decoded query parameters. */
  query: { temp_url_sig?: string; temp_url_expires?: string };
  key: string;
  /** The current time; default `new Date()`. */
  now?: Date;
}

/** The outcome of verifyTempUrl. */
export type TempUrlResult = { ok: true } | { ok: false; code: 'TempUrlMissing' | 'TempUrlExpired' | 'TempUrlInvalid'; message: string };

type Digest = 'sha1' | 'sha256' | 'sha512';

const HEX_DIGESTS: Readonly<Record<number, Digest>> = { 40: 'sha1', 64: 'sha256', 128: 'sha512' };

/** Signs a temp URL the way Swift's default does: hex HMAC-SHA1 of `METHOD\nEXPIRES\nPATH`. Returns `temp_url_sig`. */
export function signTempUrl(options: TempUrlSignOptions): string {
  return tempUrlHmac('sha1', options.key, options.method, String(options.expires), options.path).toString('hex');
}

/**
 * Checks a temp URL as Swift's tempurl middleware does: `temp_url_sig` as 40/64/128 hex digits
 * (SHA-1/256/512) or `sha1:`/`sha256:`/`sha512:` + base64; `temp_url_expires` as unix seconds or
 * `YYYY-MM-DDTHH:MM:SSZ`; a HEAD may present a GET or PUT signature. Compares in constant time.
 */
export function verifyTempUrl(options: TempUrlVerifyOptions): TempUrlResult {
  const { temp_url_sig: sig, temp_url_expires: expiresText } = options.query;
  if (sig === undefined || sig === '' || expiresText === undefined || expiresText === '') {
    return { ok: false, code: 'TempUrlMissing', message: 'the URL needs both temp_url_sig and temp_url_expires' };
  }
  const expires = parseExpires(expiresText);
  if (expires === null) return invalid(`temp_url_expires '${expiresText}' is neither unix seconds nor YYYY-MM-DDTHH:MM:SSZ`);
  const given = parseSignature(sig);
  if (given === null) return invalid('temp_url_sig is neither 40, 64 or 128 hex digits nor sha1:, sha256: or sha512: followed by base64');

  const method = options.method.toUpperCase();
  const methods = method === 'HEAD' ? ['HEAD', 'GET', 'PUT'] : [method];
  // Swift converts either form of the expiry to integer seconds before computing the HMAC.
  const matches = methods.some((signed) => {
    const expected = tempUrlHmac(given.digest, options.key, signed, String(expires), options.path).toString('hex');
    return secretsEqual(given.hex, expected);
  });
  if (!matches) return invalid(`the temp URL signature does not match ${method} ${options.path}`);
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (now > expires)
    return { ok: false, code: 'TempUrlExpired', message: `the temp URL expired at ${new Date(expires * 1000).toISOString()}` };
  return { ok: true };
}

function tempUrlHmac(digest: Digest, key: string, method: string, expires: string, path: string): Buffer {
  return createHmac(digest, key).update(`${method}\n${expires}\n${path}`, 'utf8').digest();
}

/** A signature as lower-case hex with its digest, or null when it has neither form Swift accepts. */
function parseSignature(sig: string): { digest: Digest; hex: string } | null {
  const colon = sig.indexOf(':');
  if (colon === -1) {
    const digest = HEX_DIGESTS[sig.length];
    return digest !== undefined && /^[0-9a-fA-F]+$/.test(sig) ? { digest, hex: sig.toLowerCase() } : null;
  }
  const digest = sig.slice(0, colon);
  if (digest !== 'sha1' && digest !== 'sha256' && digest !== 'sha512') return null;
  // Standard or URL-safe base64, padding optional; a `+` decoded from the query as a space is put back.
  const text = sig.slice(colon + 1).replaceAll(' ', '+');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return null;
  return { digest, hex: Buffer.from(text.replaceAll('-', '+').replaceAll('_', '/'), 'base64').toString('hex') };
}

/** `temp_url_expires` in unix seconds: an integer, or an ISO 8601 UTC time without fractions (Swift's two forms). */
function parseExpires(text: string): number | null {
  if (/^\d{1,12}$/.test(text)) return Number(text);
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z$/.exec(text);
  if (match === null) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 19) !== text.slice(0, 19) ? null : ms / 1000;
}

function invalid(message: string): TempUrlResult {
  return { ok: false, code: 'TempUrlInvalid', message };
}
