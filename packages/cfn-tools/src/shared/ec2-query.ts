// Signs an AWS query API request with EC2 signature v2 in the query string (as os-collect-config and
// Heat's pre-signed URLs do; hearth-server and heat-api-cfn both accept it).
import { signV2 } from '@hearth/protocol/signing';
import type { Credentials } from './credentials.ts';

/** RFC 3986 encoding, only `A-Za-z0-9-_.~` kept: what the v2 canonical query uses. */
export function awsEncode(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** `2024-01-01T00:00:00Z`: the Timestamp format AWS query APIs take. */
export function awsTimestamp(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The query string (without `?`) of a v2-signed request: `params` plus AWSAccessKeyId, SignatureVersion,
 * SignatureMethod, Timestamp and Signature. The signed host is the URL's host as written (with its port),
 * the path its decoded path.
 */
export function signedQuery(
  method: string,
  endpointUrl: string,
  params: Record<string, string>,
  credentials: Credentials,
  now = new Date(),
): string {
  const url = new URL(endpointUrl);
  const all: Record<string, string> = {
    ...params,
    AWSAccessKeyId: credentials.accessKeyId,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
    Timestamp: awsTimestamp(now),
  };
  const signature = signV2(credentials.secretKey, 'sha256', method, url.host, decodeURIComponent(url.pathname), all);
  const entries: Array<[string, string]> = [...Object.entries(all), ['Signature', signature]];
  return entries.map(([key, value]) => `${awsEncode(key)}=${awsEncode(value)}`).join('&');
}

/** `endpointUrl` with a v2-signed query for a GET. */
export function signedGetUrl(endpointUrl: string, params: Record<string, string>, credentials: Credentials, now = new Date()): string {
  const base = endpointUrl.split('?')[0]!;
  return `${base}?${signedQuery('GET', base, params, credentials, now)}`;
}
