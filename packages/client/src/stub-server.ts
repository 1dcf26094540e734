// For tests only: a loopback HTTP server that records each request and answers with the test's handler.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request the stub server saw. */
export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** The stub: set `handler` per test; `seen` collects every request; `url` is its base URL. */
export interface StubServer {
  handler: (req: Seen, res: ServerResponse) => void;
  readonly seen: Seen[];
  url: string;
  /** The last request, or a failed assertion when there was none. */
  lastSeen(): Seen;
}

/** Starts a stub server before the file's tests and stops it after them. */
export function useStubServer(): StubServer {
  const stub: StubServer = {
    handler: (_req, res) => res.end(),
    seen: [],
    url: '',
    lastSeen() {
      const request = stub.seen.at(-1);
      assert.ok(request, 'the stub saw no request');
      return request;
    },
  };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body };
      stub.seen.push(request);
      stub.handler(request, res);
    });
  });
  before(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    stub.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return stub;
}

/** Answers with a JSON body. */
export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}
