// Test helpers that speak the wire directly: raw HTTP bytes on a socket, and a CloudWatch query form
// signed as boto's v2 signer signs it.
import { connect } from 'node:net';
import { signV2 } from '@hearth/protocol/signing';

/** The Host the signed forms are signed for (their requests must send it). */
export const SIGNED_HOST = '127.0.0.1:8003';

/** Sends raw bytes to a listening app; resolves with all it answered before closing (at most 5 s). */
export function rawExchange(port: number, bytes: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(bytes));
    let answer = '';
    const timer = setTimeout(() => socket.destroy(), 5000);
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(answer);
    });
  });
}

/** A PutMetricData form as boto's v2 query signer sends it (every parameter in the body), for SIGNED_HOST. */
export function signedMetricForm(
  accessKeyId: string,
  secret: string,
  extra: Record<string, string>,
  timestamp = new Date().toISOString(),
): string {
  const params: Record<string, string> = {
    Action: 'PutMetricData',
    Version: '2010-08-01',
    AWSAccessKeyId: accessKeyId,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
    Timestamp: timestamp,
    ...extra,
  };
  params.Signature = signV2(secret, 'sha256', 'POST', SIGNED_HOST, '/v1/', params);
  return new URLSearchParams(params).toString();
}
