// Shared by the unit tests: options from a temp root, a log recorder, and a loopback HTTP server.
import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { httpRequest, type Logger } from '@hearth/agent-kit';
import type { CollectorContext } from '../collectors/types.ts';
import { parseCommandLine, type CollectOptions } from '../options.ts';

/** A fresh temp dir. */
export function tempDir(prefix = 'occ-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Options parsed from argv with HEARTH_ROOT at a fresh temp dir (returned as `root`). */
export function optionsFor(argv: string[], root = tempDir()): CollectOptions & { root: string } {
  const parsed = parseCommandLine(argv, { HEARTH_ROOT: root });
  if (parsed.action !== 'run') throw new Error(`not a run: ${argv.join(' ')}`);
  return { ...parsed.options, root };
}

/** One recorded log line. */
export interface LogLine {
  level: string;
  message: string;
  fields?: Record<string, unknown>;
}

/** A Logger that records lines in memory. */
export function recordingLogger(lines: LogLine[] = []): Logger & { lines: LogLine[] } {
  const make = (): Logger & { lines: LogLine[] } => ({
    lines,
    level: 'debug',
    isLevelEnabled: () => true,
    debug: (message, fields) => void lines.push({ level: 'debug', message, fields }),
    info: (message, fields) => void lines.push({ level: 'info', message, fields }),
    warn: (message, fields) => void lines.push({ level: 'warn', message, fields }),
    error: (message, fields) => void lines.push({ level: 'error', message, fields }),
    child: () => make(),
  });
  return make();
}

/** A collector context with real HTTP and a recording logger. */
export function contextFor(
  options: CollectOptions,
  log = recordingLogger(),
): CollectorContext & { log: ReturnType<typeof recordingLogger> } {
  return { options, log, http: httpRequest };
}

/** A request as the fake server saw it. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Date.now() when the request had arrived in full. */
  at: number;
}

/** A loopback HTTP server whose handler the test writes; records every request. */
export async function fakeServer(
  handler: (request: SeenRequest, response: ServerResponse) => void | Promise<void>,
): Promise<{ url: string; requests: SeenRequest[]; close(): Promise<void> }> {
  const requests: SeenRequest[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const seen = {
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(seen);
      void Promise.resolve(handler(seen, response)).catch((error: unknown) => {
        response.statusCode = 500;
        response.end(String(error));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends a JSON reply. */
export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}
