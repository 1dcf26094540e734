// Test support: a loopback heat-api-cfn that answers DescribeStackResource (JSON) for the metadata a
// test sets, checks every request's EC2 signature with the protocol's verifier, and records requests.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyEc2Signature } from '@hearth/protocol/signing';

/** One request the fake received. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  params: Record<string, string>;
  body: string;
  /** Status answered. */
  status: number;
  /** Date.now() when it was answered. */
  at: number;
}

/** A running fake heat-api-cfn. */
export interface FakeCfnApi {
  /** `http://127.0.0.1:<port>/v1/`. */
  url: string;
  port: number;
  accessKeyId: string;
  secretKey: string;
  requests: RecordedRequest[];
  /** Sets the metadata served for `stack`/`resource`. */
  setMetadata(stack: string, resource: string, metadata: unknown): void;
  /** Answers every request with this status (e.g. 503) until cleared with undefined. */
  failWith(status: number | undefined): void;
  close(): Promise<void>;
}

function reply(status: number, body: unknown): { status: number; body: string } {
  return { status, body: JSON.stringify(body) };
}

function errorBody(code: string, message: string): unknown {
  return { ErrorResponse: { Error: { Type: 'Sender', Code: code, Message: message } } };
}

/** Starts the fake on 127.0.0.1 (a free port). Only requests signed with the given key pair are answered. */
export async function startFakeCfnApi(options: { accessKeyId?: string; secretKey?: string } = {}): Promise<FakeCfnApi> {
  const accessKeyId = options.accessKeyId ?? 'AKFAKE0123456789';
  const secretKey = options.secretKey ?? 'fake-secret-key';
  const metadata = new Map<string, unknown>();
  const requests: RecordedRequest[] = [];
  let forcedStatus: number | undefined;

  const answer = (req: IncomingMessage, params: Record<string, string>, body: string): { status: number; body: string } => {
    if (forcedStatus !== undefined) return reply(forcedStatus, errorBody('InternalFailure', 'forced by the test'));
    const url = new URL(req.url ?? '/', 'http://placeholder');
    if (url.pathname !== '/v1/' && url.pathname !== '/v1') return reply(404, errorBody('NotFound', url.pathname));
    if (params.AWSAccessKeyId !== accessKeyId) return reply(403, errorBody('InvalidClientTokenId', 'unknown access key'));
    const verified = verifyEc2Signature(
      {
        method: req.method ?? 'GET',
        host: req.headers.host ?? '',
        path: decodeURIComponent(url.pathname),
        params,
        headers: req.headers,
        body,
      },
      secretKey,
      { ttlSeconds: 900 },
    );
    if (!verified.ok) return reply(403, errorBody('SignatureDoesNotMatch', verified.message));
    if (params.Action !== 'DescribeStackResource') return reply(400, errorBody('InvalidAction', params.Action ?? ''));
    const key = `${params.StackName}/${params.LogicalResourceId}`;
    if (!metadata.has(key)) return reply(400, errorBody('InvalidParameterValue', `no resource ${key}`));
    const detail = { StackName: params.StackName, LogicalResourceId: params.LogicalResourceId, Metadata: metadata.get(key) };
    return reply(200, { DescribeStackResourceResponse: { DescribeStackResourceResult: { StackResourceDetail: detail } } });
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const params = Object.fromEntries(new URL(req.url ?? '/', 'http://placeholder').searchParams);
      const { status, body: out } = answer(req, params, body);
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, params, body, status, at: Date.now() });
      res.writeHead(status, { 'content-type': 'application/json' }).end(out);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/`,
    port,
    accessKeyId,
    secretKey,
    requests,
    setMetadata: (stack, resource, value) => void metadata.set(`${stack}/${resource}`, value),
    failWith: (status) => void (forcedStatus = status),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
