import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { ACTUATOR_HEADERS } from '@hearth/protocol';
import { secretsEqual } from '../auth/secrets.ts';
import { outboundUrlProblem } from './link-local.ts';

/**
 * The signature of an actuator webhook: `sha256=` + hex HMAC-SHA256(secret, `<timestamp>.<body>`),
 * with `timestamp` the Unix seconds sent in X-Hearth-Timestamp (so a replay of an old body fails).
 */
export function actuatorSignature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
}

/** The headers of one webhook POST: content type, signature, timestamp, delivery id and event name. */
export function actuatorHeaders(secret: string, deliveryId: string, body: string, now = new Date()): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    'content-type': 'application/json',
    [ACTUATOR_HEADERS.signature]: actuatorSignature(secret, timestamp, body),
    [ACTUATOR_HEADERS.timestamp]: String(timestamp),
    [ACTUATOR_HEADERS.delivery]: deliveryId,
    [ACTUATOR_HEADERS.event]: 'scaling.desired_capacity',
  };
}

/** What a receiver does: true when the signature matches and the timestamp is at most `toleranceS` seconds off. */
export function verifyActuatorSignature(
  secret: string,
  headers: { signature: string | undefined; timestamp: string | undefined },
  body: string,
  now = new Date(),
  toleranceS = 300,
): boolean {
  const timestamp = Number(headers.timestamp);
  if (!headers.signature || !Number.isInteger(timestamp)) return false;
  if (Math.abs(now.getTime() / 1000 - timestamp) > toleranceS) return false;
  return secretsEqual(headers.signature, actuatorSignature(secret, timestamp, body));
}

/**
 * Seals an actuator secret for storage: AES-256-GCM under a key derived from the master key
 * (`key`), as `v1.<iv>.<tag>.<ciphertext>` in base64url. Nothing secret is stored in clear.
 */
export function sealSecret(key: Buffer, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(key), iv);
  const data = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv, cipher.getAuthTag(), data].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
}

/** Opens a sealed secret; throws when it was sealed under another master key or changed. */
export function openSecret(key: Buffer, sealed: string): string {
  const [version, iv, tag, data] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || data === undefined) throw new Error('the sealed actuator secret is malformed');
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(key), Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
}

function sealingKey(key: Buffer): Buffer {
  return createHmac('sha256', key).update('actuator-secret-sealing').digest();
}

/**
 * Why an actuator URL is refused, or null: the rules of every URL hearth-server calls (link-local.ts:
 * http(s), never a cloud metadata service or link-local address), and no credentials in it.
 */
export function actuatorUrlProblem(url: string): string | null {
  const problem = outboundUrlProblem('actuator.url', url);
  if (problem !== null) return problem;
  const parsed = new URL(url);
  if (parsed.username || parsed.password) return 'actuator.url must not carry a user or password: use actuator.secret';
  return null;
}

/** Delay before retry `attempt` (1, 2, …): 0.5 s doubling, at most `maxMs` (default 30 s). */
export function retryDelayMs(attempt: number, maxMs = 30_000): number {
  return Math.min(maxMs, 500 * 2 ** Math.max(0, attempt - 1));
}
