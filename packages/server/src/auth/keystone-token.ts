import { createHmac } from 'node:crypto';
import { secretsEqual } from './secrets.ts';

/** What a hearth keystone token carries. */
export interface TokenClaims {
  /** The access key of the credential the token was issued to. */
  accessKeyId: string;
  /** The project the token is scoped to. */
  projectId: string;
  expiresAt: Date;
}

/** The outcome of verifyToken: the claims, or why the token is refused. */
export type TokenResult = ({ ok: true } & TokenClaims) | { ok: false; reason: string };

/** Every token starts with this: the format version, so a later format can sit beside this one. */
export const TOKEN_PREFIX = 'hk1.';

const MIN_KEY_BYTES = 16;

/**
 * Issues a stateless token for hearth's keystone v3 shim: `hk1.` + base64url(JSON claims) + `.` +
 * base64url(HMAC-SHA256 over everything before the last dot). Throws on a key shorter than 16 bytes.
 */
export function issueToken(options: TokenClaims & { key: Buffer }): string {
  if (options.key.length < MIN_KEY_BYTES)
    throw new Error(`the token key must be at least ${MIN_KEY_BYTES} bytes, got ${options.key.length}`);
  const expires = options.expiresAt.getTime();
  if (!Number.isFinite(expires)) throw new Error('the token expiry is not a valid date');
  const claims = JSON.stringify({ a: options.accessKeyId, p: options.projectId, e: expires });
  const body = `${TOKEN_PREFIX}${Buffer.from(claims, 'utf8').toString('base64url')}`;
  return `${body}.${mac(options.key, body)}`;
}

/** Verifies a token in constant time: refuses another format, a wrong key, any change, and expiry (`now >= expiresAt`). */
export function verifyToken(token: string, key: Buffer, now: Date = new Date()): TokenResult {
  if (!token.startsWith(TOKEN_PREFIX)) return { ok: false, reason: `not a hearth token (no ${TOKEN_PREFIX} prefix)` };
  const dot = token.lastIndexOf('.');
  if (dot < TOKEN_PREFIX.length) return { ok: false, reason: 'the token has no signature' };
  const body = token.slice(0, dot);
  if (key.length < MIN_KEY_BYTES || !secretsEqual(token.slice(dot + 1), mac(key, body))) {
    return { ok: false, reason: 'the token signature does not match' };
  }
  const claims = parseClaims(body.slice(TOKEN_PREFIX.length));
  if (claims === null) return { ok: false, reason: 'the token claims are malformed' };
  if (now.getTime() >= claims.expiresAt.getTime()) return { ok: false, reason: `the token expired at ${claims.expiresAt.toISOString()}` };
  return { ok: true, ...claims };
}

function mac(key: Buffer, body: string): string {
  return createHmac('sha256', key).update(body, 'utf8').digest('base64url');
}

function parseClaims(encoded: string): TokenClaims | null {
  let claims: unknown;
  try {
    claims = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  if (typeof claims !== 'object' || claims === null) return null;
  const { a, p, e } = claims as Record<string, unknown>;
  if (typeof a !== 'string' || typeof p !== 'string' || typeof e !== 'number' || !Number.isFinite(e)) return null;
  return { accessKeyId: a, projectId: p, expiresAt: new Date(e) };
}
