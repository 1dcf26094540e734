import type { FastifyRequest } from 'fastify';
import type { Services } from '../services.ts';
import { HearthError } from '../domain/errors.ts';
import {
  extractEc2Credential,
  verifyEc2Signature,
  DEFAULT_EC2_TTL_SECONDS,
  type Ec2Request,
  type Ec2VerifyResult,
} from '@hearth/protocol/signing';
import { holderExpired, namesHolder, type Holder } from '../auth/guest-credentials.ts';
import { verifyToken } from '../auth/keystone-token.ts';
import { publicSigningName, publicUrlVariants, type PublicSigningName } from '../auth/ec2-public-name.ts';
import { heatTime } from '@hearth/protocol';

/** The request path, percent-decoded (what Heat signs), without the query. */
export function decodedPath(request: FastifyRequest): string {
  const raw = request.url.split('?', 1)[0] ?? '/';
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new HearthError('ERR_REQUEST_INVALID', { reason: 'the path has malformed percent-encoding' });
  }
}

/** Query parameters as single strings (a repeated key keeps its first value). */
export function queryParams(request: FastifyRequest): Record<string, string> {
  // No prototype: a parameter named __proto__ or constructor is a parameter like any other (and signed).
  const params = Object.create(null) as Record<string, string>;
  for (const [key, value] of Object.entries((request.query ?? {}) as Record<string, unknown>)) {
    const first = Array.isArray(value) ? (value[0] as unknown) : value;
    if (typeof first === 'string') params[key] = first;
  }
  return params;
}

/** The first query parameter the request names more than once, if any. */
function repeatedQueryKey(request: FastifyRequest): string | undefined {
  const query = (request.query ?? {}) as Record<string, unknown>;
  return Object.keys(query).find((key) => Array.isArray(query[key]));
}

/** Refuses a holder whose URLs expired. */
export function assertNotExpired(holder: Holder): void {
  if (holderExpired(holder)) {
    const expiredAt = holder.kind === 'wait_condition' && holder.expiresAt ? heatTime(new Date(holder.expiresAt)) : 'an earlier time';
    throw new HearthError('ERR_SIGNED_URL_EXPIRED', { expired_at: expiredAt });
  }
}

/** What an EC2-signed request with an unknown or revoked access key gets. */
export function revokedAccessKey(): HearthError {
  return new HearthError('ERR_SIGNED_URL_INVALID', {
    reason: 'the access key is unknown or was revoked (its resource was deleted)',
    aws_code: 'InvalidClientTokenId',
  });
}

/** Each server's public signing name, worked out once rather than per request. */
const publicNames = new WeakMap<Services, PublicSigningName | null>();

function publicNameOf(services: Services): PublicSigningName | null {
  let name = publicNames.get(services);
  if (name === undefined) {
    name = publicSigningName(services.publicUrl);
    publicNames.set(services, name);
  }
  return name;
}

/**
 * Checks the signature against the request as received, then, when it does not match, as the client signed
 * it for the public URL behind a proxy that rewrote Host or stripped the path prefix (publicUrlVariants).
 * A signature that matches one of them but expired is RequestExpired, not a mismatch.
 */
function verifyAsSigned(services: Services, ec2: Ec2Request, secret: string, ttlSeconds: number | null): Ec2VerifyResult {
  const verified = verifyEc2Signature(ec2, secret, { ttlSeconds });
  if (verified.ok || verified.code !== 'SignatureDoesNotMatch') return verified;
  const name = publicNameOf(services);
  for (const variant of name === null ? [] : publicUrlVariants(ec2, name)) {
    const again = verifyEc2Signature(variant, secret, { ttlSeconds });
    if (again.ok || again.code !== 'SignatureDoesNotMatch') return again;
  }
  return verified;
}

/** How an EC2-signed request is checked beyond its signature. */
export interface Ec2CheckOptions {
  /**
   * Signed as it is sent (PutMetricData), not a pre-signed URL: version 2 must carry a Timestamp
   * and every version gets Keystone's 15-minute replay window, so it cannot be replayed forever.
   */
  signedWhenSent?: boolean;
}

/**
 * Authenticates an EC2-signed request (signature v2 in the query, as Heat's pre-signed URLs and
 * os-collect-config send it, or SigV4 as boto sends it): the access key must exist, the signature
 * match its secret, and the credential not be expired. Returns what the credential reaches.
 * `signed` is what the signature covers: the query string's parameters unless given (a form POST
 * has its body's too), and the body SigV4 hashes.
 */
export async function ec2Holder(
  services: Services,
  request: FastifyRequest,
  signed: { params: Record<string, string>; body?: string } = { params: queryParams(request) },
  options: Ec2CheckOptions = {},
): Promise<Holder> {
  const ec2: Ec2Request = {
    method: request.method,
    host: request.headers.host ?? '',
    path: decodedPath(request),
    params: signed.params,
    headers: request.headers,
    body: signed.body ?? (request.method === 'GET' || request.method === 'HEAD' ? '' : undefined),
  };
  // A signature covers one value per name: with a name repeated, what it covers and what a reader (here, or a
  // proxy in front) takes could differ. Heat's clients never repeat one.
  const repeated = repeatedQueryKey(request);
  if (repeated !== undefined)
    throw new HearthError('ERR_SIGNED_URL_INVALID', {
      reason: `the query names '${repeated}' more than once; a signed URL names each parameter once`,
    });
  // `aws_code` is the error code the CFN API answers with (reference/server.md §1.4–1.5).
  const claimed = extractEc2Credential(ec2);
  if (!claimed.ok) {
    if (claimed.code === 'IncompleteSignature') throw new HearthError('ERR_SIGNATURE_INCOMPLETE', { reason: claimed.message });
    throw new HearthError('ERR_SIGNED_URL_INVALID', { reason: claimed.message, aws_code: claimed.code });
  }
  if (options.signedWhenSent && claimed.version === 2 && signed.params.Timestamp === undefined) {
    throw new HearthError('ERR_SIGNED_URL_INVALID', { reason: 'a request signed with version 2 as it is sent must carry a Timestamp' });
  }
  const holder = await services.guestCredentials.lookup(claimed.accessKeyId);
  if (!holder) throw revokedAccessKey();
  // Pre-signed v2 URLs live as long as their resource (Heat's alarm URLs); a client signing each
  // request (SigV4, boto) gets Keystone's 15-minute replay window.
  const ttlSeconds = claimed.version === 4 || options.signedWhenSent ? DEFAULT_EC2_TTL_SECONDS : null;
  const verified = verifyAsSigned(services, ec2, services.guestCredentials.secretOf(claimed.accessKeyId), ttlSeconds);
  if (!verified.ok) {
    // A bad or expired signature is Keystone's 401, which Heat answers as AccessDenied.
    if (verified.code === 'IncompleteSignature') throw new HearthError('ERR_SIGNATURE_INCOMPLETE', { reason: verified.message });
    throw new HearthError('ERR_SIGNED_URL_INVALID', { reason: verified.message });
  }
  assertNotExpired(holder);
  return holder;
}

/** Refuses a holder that is not the resource the request names (hearth scopes credentials per resource). */
export function assertNamesHolder(
  holder: Holder,
  target: { project: string; stackName: string; stackId: string; resourceName: string | null },
): void {
  if (!namesHolder(holder, target)) {
    throw new HearthError('ERR_AUTH_FORBIDDEN', {
      // The stack by name and id apart: `name/id` reads as a StackName to send, and it is not one (the name or the ARN is).
      reason: `this credential reaches only resource ${holder.resourceName} of stack ${holder.stackName} (id ${holder.stackId})`,
    });
  }
}

/** The holder of a hearth keystone token (`X-Auth-Token: hk1...`), or null when the header holds something else. */
export async function tokenHolder(services: Services, request: FastifyRequest): Promise<Holder | null> {
  const token = request.headers['x-auth-token'];
  if (typeof token !== 'string' || !token.startsWith('hk1.')) return null;
  const verified = verifyToken(token, services.secrets.tokenKey());
  if (!verified.ok) throw new HearthError('ERR_AUTH_INVALID');
  const holder = await services.guestCredentials.lookup(verified.accessKeyId);
  if (!holder || holder.projectId !== verified.projectId) throw new HearthError('ERR_AUTH_INVALID');
  assertNotExpired(holder);
  return holder;
}
