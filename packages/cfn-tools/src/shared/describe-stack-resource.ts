// DescribeStackResource over the CFN query API, v2-signed, asking for JSON; returns the resource's Metadata.
import { httpRequest, HttpRequestError, type HttpRequestOptions, type HttpResponse } from '@hearth/agent-kit/http';
import { parsePyJson, pyPlainData } from '@hearth/agent-kit/python-json';
import type { Credentials } from './credentials.ts';
import { signedGetUrl } from './ec2-query.ts';

/** Why metadata could not be had from the server: `unreachable` (network, timeout, 5xx) lets callers fall back to the cache. */
export class MetadataServerError extends Error {
  override readonly name = 'MetadataServerError';
  /** `unreachable`: no answer or a 5xx; `rejected`: a 4xx (credentials, stack or resource); `invalid`: an answer without Metadata. */
  readonly kind: 'unreachable' | 'rejected' | 'invalid';
  /** The HTTP status, when there was one. */
  readonly status: number | undefined;

  constructor(kind: 'unreachable' | 'rejected' | 'invalid', message: string, status?: number) {
    super(message);
    this.kind = kind;
    this.status = status;
  }
}

/** The HTTP function used; tests inject one. */
export type HttpFunction = (options: HttpRequestOptions) => Promise<HttpResponse>;

/** Options of describeStackResource. */
export interface DescribeStackResourceOptions {
  /** The CFN API base URL, e.g. `http://h:8000/v1/`. */
  endpointUrl: string;
  stack: string;
  resource: string;
  credentials: Credentials;
  /** Skip TLS verification. Default false. */
  insecure?: boolean;
  /** Per attempt. Default 10000 ms. */
  timeoutMs?: number;
  /** Retries on network errors and 502/503/504. Default 2. */
  retries?: number;
  /** Default agent-kit's httpRequest. */
  http?: HttpFunction;
  /** Signing time. Default now. */
  now?: Date;
}

/** `Code: Message` from a CFN error body (JSON or XML), else the start of the body. */
export function cfnErrorSummary(response: HttpResponse): string {
  const text = response.text().trim().replace(/\s+/g, ' ');
  const code = /"Code"\s*:\s*"([^"]+)"|<Code>([^<]+)<\/Code>/.exec(text);
  const message = /"Message"\s*:\s*"([^"]+)"|<Message>([^<]+)<\/Message>/.exec(text);
  const parts = [code?.[1] ?? code?.[2], message?.[1] ?? message?.[2]].filter(Boolean);
  return parts.length > 0 ? parts.join(': ') : text.slice(0, 200);
}

/** Extracts `...StackResourceDetail.Metadata` from a JSON DescribeStackResource answer; a JSON string is parsed. */
export function metadataFromResponse(body: unknown): unknown {
  const detail = (
    body as { DescribeStackResourceResponse?: { DescribeStackResourceResult?: { StackResourceDetail?: Record<string, unknown> } } }
  )?.DescribeStackResourceResponse?.DescribeStackResourceResult?.StackResourceDetail;
  if (detail === undefined || detail === null || typeof detail !== 'object' || !Object.hasOwn(detail, 'Metadata')) {
    throw new MetadataServerError(
      'invalid',
      'the answer has no DescribeStackResourceResponse.DescribeStackResourceResult.StackResourceDetail.Metadata',
    );
  }
  const metadata = detail.Metadata;
  if (typeof metadata !== 'string') return metadata;
  if (metadata.trim() === '') return {};
  try {
    // As json.loads reads it: 1.0 stays a float (a PyFloat), so the cache and the printed metadata keep its form.
    return pyPlainData(parsePyJson(metadata));
  } catch (error) {
    throw new MetadataServerError('invalid', `the resource's Metadata is not JSON: ${(error as Error).message}`);
  }
}

/** GETs DescribeStackResource (v2-signed, ContentType=JSON) and returns the resource's metadata; throws MetadataServerError. */
export async function describeStackResource(options: DescribeStackResourceOptions): Promise<unknown> {
  const params = {
    Action: 'DescribeStackResource',
    ContentType: 'JSON',
    StackName: options.stack,
    LogicalResourceId: options.resource,
    Version: '2010-05-15',
  };
  const url = signedGetUrl(options.endpointUrl, params, options.credentials, options.now);
  const http = options.http ?? httpRequest;
  let response: HttpResponse;
  try {
    response = await http({
      url,
      timeoutMs: options.timeoutMs ?? 10_000,
      retries: options.retries ?? 2,
      insecure: options.insecure ?? false,
      headers: { accept: 'application/json' },
    });
  } catch (error) {
    if (error instanceof HttpRequestError) throw new MetadataServerError('unreachable', error.message);
    throw error;
  }
  const where = `DescribeStackResource ${options.stack}/${options.resource} at ${options.endpointUrl}`;
  if (response.status >= 500)
    throw new MetadataServerError('unreachable', `${where} answered ${response.status}: ${cfnErrorSummary(response)}`, response.status);
  if (response.status < 200 || response.status > 299) {
    throw new MetadataServerError('rejected', `${where} answered ${response.status}: ${cfnErrorSummary(response)}`, response.status);
  }
  let body: unknown;
  try {
    body = pyPlainData(parsePyJson(response.text()));
  } catch {
    throw new MetadataServerError(
      'invalid',
      `${where} answered ${response.status} with a body that is not JSON: ${response.text().slice(0, 120)}`,
      response.status,
    );
  }
  return metadataFromResponse(body);
}
