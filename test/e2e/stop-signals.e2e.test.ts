// Stopping hearth-server the ways people do: `kill` of the `npm start` process, Ctrl-C and systemd (which
// signal the whole process group, so the server hears the signal from them and again from npm), and two
// signals close together. Each must stop it with its drain (a held long-poll answered 304) and exit 0.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { testDatabaseUrl } from '../../packages/server/src/store/test-database.ts';
import { TEST_SECRET_KEY, childEnv, freePort, removeServerData, spawnServer, whenHeld } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const TOKEN = 'test-admin-token';

/** Resolves with the exit code (or the signal's name) of `child`, or 'still running' after `ms`. */
async function exitOf(child: ChildProcess, exited: Promise<number | string>, ms: number): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running'), ms)));
  const outcome = await Promise.race([exited, late]);
  clearTimeout(timer);
  return child.exitCode ?? child.signalCode ?? outcome;
}

/** Registers a server and starts a metadata long-poll that waits (nothing changes); `reply` settles with its status or error. */
async function heldPoll(url: string): Promise<{ reply: Promise<number | string> }> {
  const created = await fetch(`${url}/v1/default/servers`, {
    method: 'POST',
    headers: { 'x-auth-token': TOKEN, 'content-type': 'application/json' },
    body: '{"name":"vm"}',
  });
  const { credential } = (await created.json()) as { credential: { token: string } };
  const agent = { authorization: `Bearer ${credential.token}` };
  const etag = (await fetch(`${url}/v1/guest/metadata`, { headers: agent })).headers.get('etag')!;
  const { request: reply } = await whenHeld(url, () =>
    fetch(`${url}/v1/guest/metadata?wait=60`, { headers: { ...agent, 'if-none-match': etag } }).then(
      (reply) => reply.status,
      (error: unknown) => `cut: ${String((error as Error).cause ?? error)}`,
    ),
  );
  return { reply }; // wrapped: an async function would wait for a promise it returns
}

/** Whether anything still answers on the port. */
async function answers(url: string): Promise<boolean> {
  return fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) }).then(
    () => true,
    () => false,
  );
}

/** `npm start -- --listen ...` in a process group of its own (as a terminal's job, or a systemd unit). */
async function npmStart(t: { after: (fn: () => Promise<void>) => void }) {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-npm-start-'));
  const database = await testDatabaseUrl();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const flags = ['--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, ...(database ? ['--database-url', database.url] : [])];
  const npm = spawn('npm', ['start', '--', ...flags], {
    cwd: ROOT,
    detached: true,
    env: childEnv({ HEARTH_ADMIN_TOKEN: TOKEN, HEARTH_SECRET_KEY: TEST_SECRET_KEY }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | string>((resolve) => npm.once('exit', (code, signal) => resolve(code ?? signal ?? '?')));
  let stdout = '';
  let stderr = '';
  npm.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  npm.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  t.after(async () => {
    // Whatever is left of the group (a server orphaned by its shell, before the fix).
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    await exitOf(npm, exited, 5000);
    await sleep(200);
    await removeServerData(dataDir);
    await database?.drop();
  });
  for (let waited = 0; !stdout.includes('hearth-server listening') && waited < 60_000; waited += 100) {
    if (npm.exitCode !== null) break;
    await sleep(100);
  }
  assert.ok(stdout.includes(`hearth-server listening on ${url}\n`), `npm start passes --listen to serve: ${stdout}${stderr}`);
  return { npm, exited, url, output: () => stdout + stderr };
}

test('kill of the npm start process stops hearth-server with its drain, exit 0', { timeout: 120_000 }, async (t) => {
  const { npm, exited, url, output } = await npmStart(t);
  const poll = await heldPoll(url);
  npm.kill('SIGTERM');
  assert.equal(await exitOf(npm, exited, 20_000), 0, output());
  assert.equal(await poll.reply, 304, 'the held long-poll is answered');
  assert.equal(await answers(url), false, 'nothing listens any more');
  assert.match(output(), /"signal":"SIGTERM","msg":"shutting down"/);
});

for (const [signal, who] of [
  ['SIGINT', 'Ctrl-C'],
  ['SIGTERM', 'systemd stop, or kill %1'],
] as const) {
  test(`${signal} to the process group of npm start (${who}) drains once, exit 0`, { timeout: 120_000 }, async (t) => {
    const { npm, exited, url, output } = await npmStart(t);
    const poll = await heldPoll(url);
    process.kill(-npm.pid!, signal);
    assert.equal(await exitOf(npm, exited, 20_000), 0, output());
    assert.equal(await poll.reply, 304, 'the held long-poll is answered');
    assert.doesNotMatch(output(), /again: stopping now/, 'the signal from npm is not taken for a second one');
    assert.equal(await answers(url), false, 'nothing listens any more');
  });
}

test('a signal repeated at once is the same stop: hearth-server drains and exits 0', { timeout: 120_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-term-'));
  const server = await spawnServer(dataDir, await freePort(), TOKEN);
  try {
    const poll = await heldPoll(server.url);
    server.child.kill('SIGTERM');
    await sleep(20); // long enough for the two to arrive apart, as npm's forwarded copy does
    server.child.kill('SIGTERM');
    assert.equal(
      await exitOf(
        server.child,
        server.exited.then((code) => code ?? '?'),
        20_000,
      ),
      0,
    );
    assert.equal(await poll.reply, 304, 'the held long-poll is answered');
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
    await removeServerData(dataDir);
  }
});
