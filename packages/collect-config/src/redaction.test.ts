// os-collect-config as a process: a malformed metadata file holding a secret (Node's JSON.parse error
// quotes the text around the mistake, up to the whole file), and a temp URL given as a flag, which the
// re-exec line repeats. Neither the log nor the world-readable status file may show the secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { tempDir } from './test-support/fixtures.ts';

const BIN = new URL('../bin/os-collect-config.js', import.meta.url).pathname;

function run(args: string[], root: string) {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root };
  return spawnSync(process.execPath, [BIN, ...args], { env, encoding: 'utf8', timeout: 30_000 });
}

test('a local metadata file that is not JSON is reported without the text around the mistake', () => {
  const root = tempDir();
  const local = join(root, 'local');
  mkdirSync(local, { mode: 0o700 });
  // An unquoted value: V8's message would quote `"{"db_password": S3cretLocalPW}"` or a window of it.
  writeFileSync(join(local, 'site.json'), '{"db_password": S3cretLocalPW}\n');
  const statusFile = join(root, 'status.json');
  const args = ['--one-time', '--command', 'true', '--debug', '--local-path', local, '--cachedir', join(root, 'cache')];
  const result = run([...args, '--status-file', statusFile, 'local'], root);
  assert.equal(result.status, 0, result.stderr);
  assert.match(
    result.stderr,
    /"msg":"Source \[local\] Unavailable\.","reason":"[^"]*site\.json is not valid JSON \(Expecting value at char 16\)"/,
  );
  assert.equal(result.stderr.includes('S3cret'), false, result.stderr);
  const status = readFileSync(statusFile, 'utf8');
  assert.match(status, /site\.json is not valid JSON/);
  assert.equal(status.includes('S3cret'), false, status);
  const shown = run(['--status', '--status-file', statusFile], root);
  assert.equal(shown.status, 0, shown.stderr);
  assert.match(shown.stdout, /local\s+\S+ unavailable: .*site\.json is not valid JSON/);
  assert.equal(shown.stdout.includes('S3cret'), false, shown.stdout);
});

test('the re-exec line hides the temp_url_sig of a --request-metadata-url flag, as it hides --heat-password', async (t) => {
  const root = tempDir();
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end('{"deployments": []}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const conf = join(root, 'os-collect-config.conf');
  writeFileSync(conf, '[DEFAULT]\n');
  // The command changes the config file, so the daemon re-executes itself after running it.
  const command = join(root, 'touch-conf');
  writeFileSync(command, `#!/bin/sh\necho '# changed' >> '${conf}'\n`);
  chmodSync(command, 0o755);
  const url = `http://127.0.0.1:${port}/v1/AUTH_p/c/o?temp_url_sig=TEMPSIGc0ffee&temp_url_expires=9999999999`;
  const args = ['--config-file', conf, '--command', command, '--cachedir', join(root, 'cache'), '--request-metadata-url', url];
  const child = spawn(process.execPath, [BIN, ...args, '--heat-password', 'HEATPWc0ffee', '--polling-interval', '1', 'request'], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const deadline = Date.now() + 20_000;
  while (!stderr.includes('Re-executing') && Date.now() < deadline && child.exitCode === null)
    await new Promise((resolve) => setTimeout(resolve, 100));
  child.kill('SIGKILL');
  assert.match(
    stderr,
    /"msg":"Re-executing os-collect-config .*--request-metadata-url http:\/\/127\.0\.0\.1:\d+\/v1\/AUTH_p\/c\/o\?temp_url_sig=\*\*\*&/,
  );
  assert.match(stderr, /--heat-password \*\*\*/);
  assert.equal(stderr.includes('TEMPSIG') || stderr.includes('HEATPW'), false, stderr);
});

test('a server that echoes the request in its coded error gets no hearth secret into the log or the status file', async (t) => {
  const root = tempDir();
  const secret = 'HEARTHSECRETc0ffee';
  // The reply quotes the request line and headers, as a debugging proxy in front of hearth-server would.
  const server = createServer((request, response) => {
    const headers = Object.entries(request.headers).map(([name, value]) => `${name}: ${String(value)}`);
    response.writeHead(401, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ error: { code: 'ERR_AUTH', message: `refused ${request.url ?? ''}\n${headers.join('\n')}` } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const conf = join(root, 'os-collect-config.conf');
  writeFileSync(
    conf,
    [
      '[DEFAULT]',
      'command = true',
      '[hearth]',
      // A token in the URL too: the watcher's last error repeats the URL.
      `metadata_url = http://127.0.0.1:${port}/v1/guest/metadata?token=URLTOKc0ffee`,
      'access_key_id = AK1',
      `secret_access_key = ${secret}`,
    ].join('\n'),
    { mode: 0o600 },
  );
  const statusFile = join(root, 'status.json');
  const child = spawn(
    process.execPath,
    [BIN, '--config-file', conf, '--cachedir', join(root, 'cache'), '--status-file', statusFile, 'hearth'],
    {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const statusText = (): string => {
    try {
      return readFileSync(statusFile, 'utf8');
    } catch {
      return '';
    }
  };
  const deadline = Date.now() + 20_000;
  while (!(statusText().includes('"lastError"') && stderr.includes('long-poll failed')) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  child.kill('SIGKILL');
  const status = statusText();
  assert.match(status, /"lastError": "GET http:\/\/127\.0\.0\.1:\d+\/v1\/guest\/metadata\?token=\*\*\* answered 401: ERR_AUTH: refused/);
  assert.match(stderr, /hearth long-poll failed/);
  for (const text of [stderr, status]) {
    assert.equal(text.includes(secret) || text.includes('URLTOK'), false, text);
  }
});
