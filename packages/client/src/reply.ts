import { HearthApiError } from './errors.ts';
import type { CallSpec, Reply, Transport } from './http.ts';

/**
 * Returns `reply.body[key]`, the envelope field every native reply wraps its resource in
 * (`{server: ...}`, `{software_configs: [...]}`). Throws ERR_RESPONSE_INVALID when it is missing.
 * The value is trusted to have the protocol's shape: hearth-server validates what it sends.
 */
export function envelopeField<T>(reply: Reply, key: string, spec: Pick<CallSpec, 'method' | 'path'>): T {
  const body = reply.body;
  // Every envelope field is an object or a list: a null one (a server that is not hearth) must not reach `.map`.
  const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
  if (typeof value === 'object' && value !== null) return value as T;
  throw new HearthApiError({
    status: reply.status,
    code: 'ERR_RESPONSE_INVALID',
    message: `${spec.method} ${spec.path} answered without the "${key}" field (or with one that is not an object or a list): check that HEARTH_URL points at hearth-server.`,
    method: spec.method,
    url: spec.path,
  });
}

/** Performs a call and returns its envelope field `key` (see envelopeField). */
export async function callForField<T>(transport: Transport, spec: CallSpec, key: string): Promise<T> {
  const reply = await transport.call(spec);
  return envelopeField<T>(reply, key, spec);
}
