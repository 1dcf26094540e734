import { createHash, createHmac } from 'node:crypto';
import { secretsEqual } from './constant-time.ts';
import { canonicalHeaderValue, canonicalQuery, canonicalUris, hostCandidates, parseAmzDate, parseIsoTimestamp } from './ec2-canonical.ts';
import { signV2 } from './ec2-sign-v2.ts';

/** An HTTP request as the EC2 signature checks need it: everything comes from the wire, decoded. */
export interface Ec2Request {
  method: string;
  /** The Host header as received (may carry `:port`). */
  host: string;
  /** The decoded path, e.g. `/v1/signal/arn:openstack:heat::p:stacks/s/id/resources/r`. */
  path: string;
  /** All query parameters (and form-body parameters if any), decoded, including `Signature`. */
  params: Record<string, string>;
  /** Request headers with lower-case names, as node gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body: hashed by SigV4, and tells query parameters from form parameters on a POST. */
  body?: Buffer | string;
}

/** The access key a request claims and the signature version it uses, or why it has none. */
export type Ec2CredentialResult =
  | { ok: true; accessKeyId: string; version: 2 | 4 }
  | { ok: false; code: 'IncompleteSignature' | 'MissingAuthenticationToken'; message: string };

/** The outcome of checking a request's signature against the secret of its access key. */
export type Ec2VerifyResult =
  { ok: true } | { ok: false; code: 'SignatureDoesNotMatch' | 'RequestExpired' | 'IncompleteSignature'; message: string };

/** Options of verifyEc2Signature. */
export interface Ec2VerifyOptions {
  /** The current time; default `new Date()`. */
  now?: Date;
  /** Reject requests whose Timestamp / X-Amz-Date is older than this; default null (no limit, Heat's alarm URLs). */
  ttlSeconds?: number | null;
}

/** Keystone's `[credential] auth_ttl` default, which Heat relies on: 15 minutes. */
export const DEFAULT_EC2_TTL_SECONDS = 900;

type Failure<C extends string> = { ok: false; code: C; message: string };

interface V2Auth {
  version: 2;
  accessKeyId: string;
  signature: string;
}

interface V4Auth {
  version: 4;
  accessKeyId: string;
  signature: string;
  /** `date/region/service/aws4_request`, taken as the client wrote it (boto derives region and service from the host name). */
  scope: string;
  scopeDate: string;
  region: string;
  service: string;
  signedHeaders: string;
  /** The X-Amz-Expires of a pre-signed SigV4 URL, if any. */
  expires: string | undefined;
}

const V4_ALGORITHM = 'AWS4-HMAC-SHA256';
const OLD_VERSION_REASON =
  'it signs neither the verb nor the path, so one signature would open every resource; sign with SignatureVersion=2 or SigV4';

/**
 * Finds the signature and the access key of a request and its signature version (reference/server.md
 * §1.4 steps 1, 2 and 4): `Signature` + `AWSAccessKeyId` with `SignatureVersion=2`, or SigV4 through an
 * `Authorization: AWS4-HMAC-SHA256` header or `X-Amz-*` query parameters. Versions 0 and 1 are refused.
 */
export function extractEc2Credential(req: Ec2Request): Ec2CredentialResult {
  const auth = parseAuth(req);
  return 'ok' in auth ? auth : { ok: true, accessKeyId: auth.accessKeyId, version: auth.version };
}

/**
 * Checks a request's EC2 signature (v2 or SigV4) with the secret of its access key, in constant time,
 * retrying once with the host stripped of its port (boto signs the bare host name). With `ttlSeconds`,
 * a request whose Timestamp (v2) or X-Amz-Date (v4) is older than `now - ttlSeconds` is `RequestExpired`.
 */
export function verifyEc2Signature(req: Ec2Request, secret: string, options: Ec2VerifyOptions = {}): Ec2VerifyResult {
  const auth = parseAuth(req);
  if ('ok' in auth) return { ok: false, code: 'IncompleteSignature', message: auth.message };
  const checked = auth.version === 2 ? checkV2(req, auth, secret) : checkV4(req, auth, secret);
  if (!checked.ok) return checked;
  const now = (options.now ?? new Date()).getTime();
  if (checked.expiresAt !== null && now > checked.expiresAt) {
    return { ok: false, code: 'RequestExpired', message: `the pre-signed request expired at ${new Date(checked.expiresAt).toISOString()}` };
  }
  const ttl = options.ttlSeconds;
  if (typeof ttl === 'number' && checked.signedAt !== null && now > checked.signedAt + ttl * 1000) {
    const signedAt = new Date(checked.signedAt).toISOString();
    return { ok: false, code: 'RequestExpired', message: `the request was signed at ${signedAt}, more than ${ttl} s ago; sign it again` };
  }
  return { ok: true };
}

type Checked = { ok: true; signedAt: number | null; expiresAt: number | null } | Failure<'SignatureDoesNotMatch' | 'IncompleteSignature'>;

function parseAuth(req: Ec2Request): V2Auth | V4Auth | Failure<'IncompleteSignature' | 'MissingAuthenticationToken'> {
  const { params } = req;
  const version = params.SignatureVersion;
  const authorization = headerValue(req.headers, 'authorization');
  const v4Header = version === undefined && authorization?.startsWith(`${V4_ALGORITHM} `) === true;
  const v4Query = version === undefined && !v4Header && params['X-Amz-Algorithm'] !== undefined;
  const fields = v4Header ? authorizationFields(authorization ?? '') : new Map<string, string>();

  const signature = v4Header
    ? fields.get('Signature')
    : v4Query
      ? params['X-Amz-Signature']
      : (params.Signature ?? params['X-Amz-Signature']);
  if (signature === undefined || signature === '') {
    return incomplete(
      'the request carries no signature (a Signature or X-Amz-Signature parameter, or an AWS4-HMAC-SHA256 Authorization header)',
    );
  }
  const credential = v4Header ? fields.get('Credential') : v4Query ? params['X-Amz-Credential'] : undefined;
  const accessKeyId = credential !== undefined ? credential.split('/')[0] : params.AWSAccessKeyId;
  if (accessKeyId === undefined || accessKeyId === '') {
    return {
      ok: false,
      code: 'MissingAuthenticationToken',
      message: 'the request names no access key (AWSAccessKeyId or a SigV4 Credential)',
    };
  }

  if (version === '2') return { version: 2, accessKeyId, signature: signature.replaceAll(' ', '+') };
  if (version === '0' || version === '1') return incomplete(`SignatureVersion ${version} is not accepted: ${OLD_VERSION_REASON}`);
  if (version !== undefined) return incomplete(`unknown SignatureVersion '${version}'; use 2 or SigV4`);
  if (!v4Header && !v4Query) return incomplete('the request has a Signature but no SignatureVersion; add SignatureVersion=2');
  if (v4Query && params['X-Amz-Algorithm'] !== V4_ALGORITHM) {
    return incomplete(`unsupported X-Amz-Algorithm '${params['X-Amz-Algorithm']}'; use ${V4_ALGORITHM}`);
  }

  const parts = (credential ?? '').split('/');
  const [, scopeDate = '', region = '', service = '', terminator] = parts;
  if (parts.length !== 5 || !/^\d{8}$/.test(scopeDate) || terminator !== 'aws4_request') {
    return incomplete(`the SigV4 Credential '${credential}' is not ACCESS_KEY/YYYYMMDD/REGION/SERVICE/aws4_request`);
  }
  const signedHeaders = v4Header ? fields.get('SignedHeaders') : params['X-Amz-SignedHeaders'];
  if (signedHeaders === undefined || signedHeaders === '') return incomplete('the SigV4 request lists no SignedHeaders');
  const scope = parts.slice(1).join('/');
  return {
    version: 4,
    accessKeyId,
    signature: signature.toLowerCase(),
    scope,
    scopeDate,
    region,
    service,
    signedHeaders,
    expires: v4Query ? params['X-Amz-Expires'] : undefined,
  };
}

function checkV2(req: Ec2Request, auth: V2Auth, secret: string): Checked {
  const timestamp = req.params.Timestamp;
  const signedAt = timestamp === undefined ? null : parseIsoTimestamp(timestamp);
  if (signedAt === null && timestamp !== undefined) return incomplete(`the Timestamp '${timestamp}' is not an ISO 8601 date`);
  const { Signature: _signature, ...params } = req.params;
  const digests: Array<'sha256' | 'sha1'> = req.params.SignatureMethod === 'HmacSHA1' ? ['sha256', 'sha1'] : ['sha256'];
  for (const host of hostCandidates(req.host)) {
    for (const digest of digests) {
      if (secretsEqual(auth.signature, signV2(secret, digest, req.method, host, req.path, params)))
        return { ok: true, signedAt, expiresAt: null };
    }
  }
  return mismatch();
}

function checkV4(req: Ec2Request, auth: V4Auth, secret: string): Checked {
  const amzDate = headerValue(req.headers, 'x-amz-date') ?? req.params['X-Amz-Date'];
  if (amzDate === undefined) return incomplete('the SigV4 request has no X-Amz-Date header or parameter');
  const signedAt = parseAmzDate(amzDate);
  if (signedAt === null) return incomplete(`the X-Amz-Date '${amzDate}' is not YYYYMMDDTHHMMSSZ`);
  if (!amzDate.startsWith(auth.scopeDate))
    return incomplete(`the X-Amz-Date '${amzDate}' is not on the Credential scope date ${auth.scopeDate}`);
  let expiresAt: number | null = null;
  if (auth.expires !== undefined) {
    if (!/^\d{1,9}$/.test(auth.expires)) return incomplete(`the X-Amz-Expires '${auth.expires}' is not a number of seconds`);
    expiresAt = signedAt + Number(auth.expires) * 1000;
  }

  const payloadHash = v4PayloadHash(req);
  if (payloadHash === null) return mismatch('the x-amz-content-sha256 header does not match the request body');
  const headerNames = auth.signedHeaders.split(';').map((name) => name.trim().toLowerCase());
  const missing = headerNames.find((name) => name !== 'host' && headerValue(req.headers, name) === undefined);
  if (missing !== undefined) return mismatch(`the signed header '${missing}' is not in the request`);

  const signingKey = [auth.scopeDate, auth.region, auth.service, 'aws4_request'].reduce<Buffer>(
    (key, part) => createHmac('sha256', key).update(part, 'utf8').digest(),
    Buffer.from(`AWS4${secret}`, 'utf8'),
  );
  const query = canonicalQuery(v4QueryParams(req));
  for (const host of hostCandidates(req.host)) {
    const headers = headerNames.map(
      (name) => `${name}:${canonicalHeaderValue(name === 'host' ? host : (headerValue(req.headers, name) ?? ''))}\n`,
    );
    for (const uri of canonicalUris(req.path)) {
      const canonicalRequest = [req.method.toUpperCase(), uri, query, headers.join(''), auth.signedHeaders, payloadHash].join('\n');
      const stringToSign = [V4_ALGORITHM, amzDate, auth.scope, sha256Hex(canonicalRequest)].join('\n');
      const signature = createHmac('sha256', signingKey).update(stringToSign, 'utf8').digest('hex');
      if (secretsEqual(auth.signature, signature)) return { ok: true, signedAt, expiresAt };
    }
  }
  return mismatch();
}

/** The hash SigV4 signs: the x-amz-content-sha256 header when it matches the body (or is UNSIGNED-PAYLOAD on an empty body), else the body's. */
function v4PayloadHash(req: Ec2Request): string | null {
  const bodyHash = sha256Hex(req.body ?? '');
  const claimed = headerValue(req.headers, 'x-amz-content-sha256');
  if (claimed === undefined) return bodyHash;
  if (claimed.toLowerCase() === bodyHash) return claimed;
  if (claimed === 'UNSIGNED-PAYLOAD' && (req.body === undefined || req.body.length === 0)) return claimed;
  return null;
}

/** The URL query parameters of a SigV4 request: all parameters but X-Amz-Signature and those that came in a form body. */
function v4QueryParams(req: Ec2Request): Record<string, string> {
  const { 'X-Amz-Signature': _signature, ...params } = req.params;
  const contentType = headerValue(req.headers, 'content-type') ?? '';
  if (req.body !== undefined && req.body.length > 0 && contentType.toLowerCase().startsWith('application/x-www-form-urlencoded')) {
    for (const [key, value] of new URLSearchParams(req.body.toString())) if (params[key] === value) delete params[key];
  }
  return params;
}

function authorizationFields(authorization: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const part of authorization.slice(V4_ALGORITHM.length).split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  return fields;
}

function headerValue(headers: Ec2Request['headers'], name: string): string | undefined {
  // Own headers only: a SignedHeaders entry such as `constructor` or `__proto__` names no header (not the object's prototype).
  if (!Object.hasOwn(headers, name)) return undefined;
  const value = headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

function incomplete(message: string): Failure<'IncompleteSignature'> {
  return { ok: false, code: 'IncompleteSignature', message };
}

function mismatch(
  message = 'the signature does not match: check the secret key and that the request was not changed after signing',
): Failure<'SignatureDoesNotMatch'> {
  return { ok: false, code: 'SignatureDoesNotMatch', message };
}
