// `deployment wait` through the real client while hearth-server restarts: it rides through the
// refused connections and exits 0 when the deployment completes after the restart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { runWithClient } from './test-support.ts';

const DEPLOYMENT_ID = 'd2d2d2d2-0000-4000-8000-000000000002';

/** A server answering every request with the deployment in `status`; on a long-poll, `onPoll` decides. */
function deploymentServer(status: string, onPoll?: () => void): Server {
  return createServer((req, res) => {
    if (onPoll && req.url?.includes('wait=') === true) {
      res.destroy();
      onPoll();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ software_deployment: { id: DEPLOYMENT_ID, status, status_reason: 'Outputs received' } }));
  });
}

const listen = (server: Server, port: number) => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

test(
  'deployment wait rides through a restart of hearth-server and exits 0 when the deployment completes',
  { timeout: 20_000 },
  async () => {
    let restarted: Server | undefined;
    // The first server goes down at the first long-poll; the second comes up on its port 1.5 s later.
    const first: Server = deploymentServer('IN_PROGRESS', () => {
      first.closeAllConnections();
      void close(first).then(() =>
        setTimeout(() => {
          restarted = deploymentServer('COMPLETE');
          void listen(restarted, port);
        }, 1500),
      );
    });
    await listen(first, 0);
    const port = (first.address() as AddressInfo).port;
    try {
      const result = await runWithClient(['deployment', 'wait', DEPLOYMENT_ID, '--timeout', '15'], {
        HEARTH_URL: `http://127.0.0.1:${port}`,
        HEARTH_TOKEN: 'admin',
      });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, /hearth-server unreachable \(ERR_CONNECTION\), retrying/);
      assert.match(result.stderr, /deployment d2d2d2d2-0000-4000-8000-000000000002: COMPLETE after \d+ s/);
      assert.match(result.stdout, /status:\s+COMPLETE/);
    } finally {
      if (restarted) await close(restarted);
    }
  },
);
