import { HearthApiError } from './errors.ts';
import type { CallSpec, Reply, Transport } from './http.ts';

/** What an envelope field must be: most are an object or a list; a few are text (or text or null). */
export type FieldKind = 'object' | 'string' | 'string-or-null';

const FIELD_KINDS: Record<FieldKind, { fits: (value: unknown) => boolean; what: string }> = {
  object: { fits: (value) => typeof value === 'object' && value !== null, what: 'an object or a list' },
  string: { fits: (value) => typeof value === 'string', what: 'text' },
  'string-or-null': { fits: (value) => typeof value === 'string' || value === null, what: 'text or null' },
};

/**
 * Returns `reply.body[key]`, the envelope field every native reply wraps its resource in
 * (`{server: ...}`, `{software_configs: [...]}`). Throws ERR_RESPONSE_INVALID when it is missing
 * or not of its kind (a `{"servers": null}` from something that is not hearth must not reach
 * `.map`). Beyond that the value is trusted to have the protocol's shape: hearth-server validates
 * what it sends.
 */
export function envelopeField<T>(reply: Reply, key: string, spec: Pick<CallSpec, 'method' | 'path'>, kind: FieldKind = 'object'): T {
  const body = reply.body;
  const present = typeof body === 'object' && body !== null && Object.hasOwn(body, key);
  const value = present ? (body as Record<string, unknown>)[key] : undefined;
  if (present && FIELD_KINDS[kind].fits(value)) return value as T;
  throw new HearthApiError({
    status: reply.status,
    code: 'ERR_RESPONSE_INVALID',
    message: `${spec.method} ${spec.path} answered ${present ? `a "${key}" field that is not ${FIELD_KINDS[kind].what}` : `without the "${key}" field`}: check that HEARTH_URL points at hearth-server.`,
    method: spec.method,
    url: spec.path,
  });
}

/** Performs a call and returns its envelope field `key` (see envelopeField). */
export async function callForField<T>(transport: Transport, spec: CallSpec, key: string): Promise<T> {
  const reply = await transport.call(spec);
  return envelopeField<T>(reply, key, spec);
}
