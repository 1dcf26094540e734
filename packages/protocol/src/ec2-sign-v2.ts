// The signing side of EC2 signature v2: the signature a client computes (os-collect-config's cfn
// collector, cfn-signal's pre-signed URLs) and the pre-signed URLs Heat's signal responder hands
// out. ec2-signature.ts checks requests against the same signature.
import { createHmac } from 'node:crypto';
import { canonicalQuery, percentEncode } from './ec2-canonical.ts';

/**
 * Signature v2: base64 HMAC of `VERB\nhost\npath\nCQS`, SignatureMethod forced to match the digest
 * as Keystone's signer does. `host` is the Host header as sent, `path` the decoded path, `params`
 * every query parameter but `Signature`. Clients (os-collect-config's cfn collector) sign with it too.
 */
export function signV2(
  secret: string,
  digest: 'sha256' | 'sha1',
  method: string,
  host: string,
  path: string,
  params: Record<string, string>,
): string {
  const signed = { ...params, SignatureMethod: digest === 'sha256' ? 'HmacSHA256' : 'HmacSHA1' };
  const stringToSign = `${method.toUpperCase()}\n${host}\n${path}\n${canonicalQuery(signed)}`;
  return createHmac(digest, secret).update(stringToSign, 'utf8').digest('base64');
}

/** Options of presignV2Url. */
export interface PresignV2Options {
  /** PUT for `/waitcondition`, POST for `/signal` (Heat's verbs). */
  method: 'PUT' | 'POST' | 'GET';
  /** Where the ARN is appended, e.g. `http://127.0.0.1:8000/v1/waitcondition`; lower-cased as Heat does. */
  baseUrl: string;
  /** The stack or resource ARN, put in the path percent-encoded with `/` kept. */
  arn: string;
  accessKeyId: string;
  secret: string;
  /** The signing time; default now. `null` leaves Timestamp out: the URL never expires (Heat's alarm_url). */
  timestamp?: Date | null;
}

/**
 * Builds a pre-signed URL the way Heat's signal responder does (reference/server.md §1.3): query
 * SignatureMethod, SignatureVersion, AWSAccessKeyId, [Timestamp], Signature; what is signed is the verb,
 * the lower-cased host with its port and the unquoted path. Throws when baseUrl is not a plain http(s) URL.
 */
export function presignV2Url(options: PresignV2Options): string {
  const base = new URL(options.baseUrl.toLowerCase());
  if ((base.protocol !== 'http:' && base.protocol !== 'https:') || base.search !== '' || base.hash !== '') {
    throw new Error(`the signal base URL must be http(s) without a query or fragment, got '${options.baseUrl}'`);
  }
  const path = `${base.pathname.replace(/\/+$/, '')}/${percentEncode(options.arn, '/')}`;
  const params: Record<string, string> = { SignatureMethod: 'HmacSHA256', SignatureVersion: '2', AWSAccessKeyId: options.accessKeyId };
  if (options.timestamp !== null) params.Timestamp = (options.timestamp ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const signature = signV2(options.secret, 'sha256', options.method, base.host, decodeURIComponent(path), params);
  const entries: Array<[string, string]> = [...Object.entries(params), ['Signature', signature]];
  const query = entries.map(([k, v]) => `${percentEncode(k)}=${percentEncode(v)}`);
  return `${base.origin}${path}?${query.join('&')}`;
}
