// httpRequest in a real process under libfaketime, its wall clock stepped while a request is out (NTP
// correcting a VM that booted with a wrong clock): the request's deadlines are on the monotonic clock, so a
// step back does not keep a request to a server that never answers open for years. Needs the `faketime`
// package; skipped with a message without it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { faketimeSkip, steppedClockEnv } from '../../../test/helpers/faketime.ts';

const HTTP_MODULE = new URL('./http.ts', import.meta.url).href;

/** Runs one httpRequest to `url` (timeoutMs 1500) in a child process whose clock `clock` steps; its outcome line and how long it took. */
async function requestInChild(url: string, clock: string): Promise<{ out: string; tookMs: number }> {
  const script = `
    const { httpRequest } = await import(${JSON.stringify(HTTP_MODULE)});
    try {
      const response = await httpRequest({ method: 'GET', url: ${JSON.stringify(url)}, timeoutMs: 1500, retries: 0 });
      console.log('status ' + response.status);
    } catch (error) {
      console.log('error ' + error.code);
    }`;
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    env: { ...process.env, ...steppedClockEnv(clock) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await new Promise((resolve) => child.once('close', resolve));
  clearTimeout(killer);
  return { out: out.trim(), tookMs: performance.now() - started };
}

test('a wall clock stepped back 2 years while a request is out: the request still times out', { skip: faketimeSkip() }, async (t) => {
  const held = new Set<ServerResponse>();
  let connected = (): void => undefined;
  const reached = new Promise<void>((resolve) => (connected = resolve));
  const server = createServer((_request, response) => {
    held.add(response); // never answers
    connected();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const clock = join(mkdtempSync(join(tmpdir(), 'http-clock-')), 'faketime');
  // Stepped once the request has reached the server: its 1.5 s deadline is armed by then.
  const run = requestInChild(url, clock);
  await reached;
  writeFileSync(clock, '-2y\n');
  const { out, tookMs } = await run;
  assert.equal(out, 'error ERR_HTTP_TIMEOUT', `took ${Math.round(tookMs)} ms`);
});
