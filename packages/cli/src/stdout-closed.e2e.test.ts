// Spawns the real `hearth` CLI against a real hearth-server on 127.0.0.1 with a stdout whose reader goes away, as
// `hearth events --follow | head -2` does: hearth ends quietly with 141, without a stack trace.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createClient } from '@hearth/client';
import { startServer, type TestServer } from '../../../test/helpers/server.ts';
import { STDOUT_CLOSED_EXIT } from './io.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
let server: TestServer;

before(async () => {
  server = await startServer();
});
after(() => server.close());

/** How a `hearth` process ended. */
interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Starts `hearth ARGS` with stdout on a pipe; `stdoutClosed` resolves once the test closed the reader's end (at once,
 * or after the first line). Killed after 30 s, so a hearth that went on writing into nothing ends the test too.
 */
function startHearth(args: string[], closeAfterFirstLine: boolean): { ended: Promise<Ended>; stdoutClosed: Promise<void> } {
  const env: NodeJS.ProcessEnv = { ...process.env, HEARTH_URL: server.url, HEARTH_TOKEN: server.token };
  delete env.NODE_EXTRA_CA_CERTS;
  delete env.HEARTH_PROJECT;
  const child = spawn(process.execPath, ['--import', 'tsx', 'packages/cli/src/bin.ts', ...args], {
    cwd: repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const stdoutClosed = new Promise<void>((resolve) => {
    if (!closeAfterFirstLine) {
      child.stdout.destroy();
      resolve();
      return;
    }
    let seen = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      seen += chunk;
      if (!seen.includes('\n')) return;
      child.stdout.destroy();
      resolve();
    });
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const ended = new Promise<Ended>((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    }),
  );
  return { ended, stdoutClosed };
}

test('events --follow whose reader left ends at the next event, quietly, with 141', async () => {
  const client = createClient({ url: server.url, token: server.token });
  await client.createServer({ name: 'before-follow' });
  const follow = startHearth(['events', '--follow'], true);
  await follow.stdoutClosed;
  // A new event for hearth to write into the closed pipe.
  await client.createServer({ name: 'after-close' });
  const ended = await follow.ended;
  assert.equal(ended.signal, null, 'not killed by the test timeout');
  assert.equal(ended.code, STDOUT_CLOSED_EXIT);
  assert.equal(ended.stderr, '');
});

test('a listing whose reader left before it was written exits 141, not 0, and says nothing', async () => {
  const client = createClient({ url: server.url, token: server.token });
  for (let i = 0; i < 3; i += 1) await client.createServer({ name: `listed-${i}` });
  for (const args of [['server', 'list'], ['--json', 'server', 'list'], ['--help']]) {
    const ended = await startHearth(args, false).ended;
    assert.equal(ended.code, STDOUT_CLOSED_EXIT, args.join(' '));
    assert.equal(ended.stderr, '', args.join(' '));
  }
});
