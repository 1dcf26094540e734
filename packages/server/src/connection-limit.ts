// Every agent waiting on a long-poll holds a connection, and every connection a file descriptor: serve caps
// connections below the open-files limit and says when it refuses one.
import { readFileSync, readdirSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';

/** File descriptors kept free of connections: the store's files and connections, outbound webhooks, logs. */
const SPARE_FILES = 64;
/** How often at most a refused connection is logged (a fleet reconnecting would log a line each). */
const DROP_LOG_MS = 10_000;

/** The soft open-files limit (ulimit -n) of this process, as Linux reports it; undefined if unknown or unlimited. */
function openFilesLimit(): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)\s/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line ? Number(line[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Caps connections below the open-files limit, and says when one is refused. Every waiting agent
 * holds a connection (a long-poll): without a cap, the connection that takes the last descriptor
 * leaves the store and webhooks none, and libuv resets each one past it without a word in the log.
 */
export function limitConnections(app: FastifyInstance): void {
  const limit = openFilesLimit();
  if (limit === undefined) return;
  let inUse: number;
  try {
    inUse = readdirSync('/proc/self/fd').length;
  } catch {
    return;
  }
  const max = Math.max(1, limit - inUse - SPARE_FILES);
  app.server.maxConnections = max;
  app.log.info({ maxConnections: max, openFilesLimit: limit }, `accepting up to ${max} connections at once (open-files limit ${limit})`);
  // The first refusal is logged at once, the ones after it as one count per DROP_LOG_MS.
  let refused = 0;
  let quiet: NodeJS.Timeout | undefined;
  const report = () => {
    quiet = undefined;
    if (refused === 0) return;
    app.log.warn(
      { refused, maxConnections: max, openFilesLimit: limit },
      `refused ${refused} connection(s): ${max} are open, all the open-files limit (ulimit -n ${limit}) leaves room for; ` +
        'raise it (LimitNOFILE= in the systemd unit, ulimit -n) to serve more agents at once',
    );
    refused = 0;
    quiet = setTimeout(report, DROP_LOG_MS).unref();
  };
  app.server.on('drop', () => {
    refused++;
    if (!quiet) report();
  });
}
