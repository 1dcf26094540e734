// For tests only: a loopback node:http server that records each request and answers from a
// script, a logger that keeps its lines, and a deployment object builder.
import { spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '@hearth/agent-kit';

/** One request the fake server received. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  at: number;
}

/** What the fake answers: a status, optional headers and body. */
export interface FakeReply {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/** A running fake server. */
export interface FakeServer {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts a server on 127.0.0.1 (`port`, default any free one) answering each request with `reply(request, index)`. */
export async function startFake(reply: (request: RecordedRequest, index: number) => FakeReply, port = 0): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), at: Date.now() };
      requests.push(recorded);
      const answer = reply(recorded, requests.length - 1);
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${bound}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A logger whose lines (parsed JSON) are kept in `lines`, and the raw text in `text()`. */
export function memoryLogger(): { log: Logger; lines: Array<Record<string, unknown>>; text(): string } {
  let raw = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      raw += chunk.toString('utf8');
      done();
    },
  });
  return {
    log: createLogger({ name: 'heat-config-notify', stream, level: 'debug' }),
    get lines() {
      return raw
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    },
    text: () => raw,
  };
}

/** A deployment object as heat-config writes `<deployed>/<id>.json`, with the given inputs. */
export function deploymentWith(inputs: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'c0ffee00-0000-4000-8000-000000000001',
    name: 'hello',
    group: 'script',
    creation_time: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    config: '#!/bin/sh\necho hi',
    inputs: Object.entries(inputs).map(([name, value]) => ({ name, type: 'String', value })),
    outputs: [],
    options: {},
    ...extra,
  };
}

/** The heat-config-notify bin. */
export const NOTIFY_BIN = new URL('../bin/heat-config-notify.js', import.meta.url).pathname;

/** Runs the bin with `stdin`; not spawnSync, since a server in this process must keep answering. */
export function runNotify(args: string[], env: NodeJS.ProcessEnv, stdin: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [NOTIFY_BIN, ...args], { env, stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(stdin);
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}
