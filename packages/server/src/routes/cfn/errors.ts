import type { HearthError } from '../../domain/errors.ts';
import { cfnErrorBody } from './xml.ts';

/** The format of a CFN reply: XML unless the request says `ContentType=JSON` (heat-api-cfn's rule). */
export type CfnFormat = 'xml' | 'json';

/** The CFN API's paths: `/v1/` (the query API), `/v1/waitcondition/…` and `/v1/signal/…`, with or without the trailing slash. */
const CFN_PATH = /^\/v1(?:\/(?:(?:waitcondition|signal)(?:\/.*)?)?)?$/s;

/**
 * Whether a request URL (path and query, as sent) is the CFN API's. Errors met before routing (a
 * bad URL, a parser error, a request that arrives while the server stops, an unknown method) are
 * answered in the CFN shape there too: boto reads the code and message of an `ErrorResponse` only.
 */
export function isCfnUrl(url: string): boolean {
  return CFN_PATH.test(url.split('?', 1)[0] ?? '');
}

/** The CFN reply format a URL's query string asks for (a malformed query is read as well as it can be). */
export function cfnFormatOfUrl(url: string): CfnFormat {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1) : '';
  return new URLSearchParams(query).get('ContentType')?.toUpperCase() === 'JSON' ? 'json' : 'xml';
}

/** The AWS error code for a hearth error (an error that names its AWS code, `aws_code`, gets that). */
export function cfnCode(status: number, code: string, details: Record<string, unknown> = {}): string {
  if (typeof details.aws_code === 'string') return details.aws_code;
  if (code === 'ERR_SIGNATURE_INCOMPLETE') return 'IncompleteSignature';
  if (code === 'ERR_SIGNED_URL_INVALID' || code === 'ERR_SIGNED_URL_EXPIRED' || status === 401 || status === 403) return 'AccessDenied';
  if (code === 'ERR_ROUTE_NOT_FOUND' || code === 'ERR_METHOD_NOT_ALLOWED') return 'InvalidAction';
  if (status === 413) return 'RequestLimitExceeded';
  if (status === 404) return 'ValidationError';
  if (status === 409) return 'InvalidAction';
  if (status === 503) return 'ServiceUnavailable';
  return status >= 500 ? 'InternalFailure' : 'InvalidParameterValue';
}

/** A coded error as a CFN error reply: its Content-Type and body; the message ends with hearth's code. */
export function cfnErrorReply(error: HearthError, format: CfnFormat): { contentType: string; body: string } {
  const body = cfnErrorBody(
    {
      type: error.statusCode >= 500 ? 'Server' : 'Sender',
      code: cfnCode(error.statusCode, error.code, error.details),
      message: `${error.message} (${error.code})`,
    },
    format,
  );
  return { contentType: format === 'json' ? 'application/json' : 'application/xml', body };
}
