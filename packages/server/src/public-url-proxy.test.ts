// Spawns a real `hearth-server serve` behind a real TLS-terminating proxy on 127.0.0.1 (node:https, a certificate
// made with openssl) that passes the client's Host on, as a load balancer in front of a fleet does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signV2 } from '@hearth/protocol/signing';
import { freePort } from '../../../test/helpers/server.ts';
import { BIN, binEnv } from './bin-test-support.ts';

const TOKEN = 'test-admin-token';

/** A self-signed certificate for 127.0.0.1 (its own CA), made with openssl in `dir`. */
function certificate(dir: string): { key: Buffer; cert: Buffer } {
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'];
  const made = spawnSync('openssl', [...args, '-addext', 'subjectAltName=IP:127.0.0.1'], { encoding: 'utf8', timeout: 30_000, input: '' });
  assert.equal(made.status, 0, made.stderr);
  return { key: readFileSync(key), cert: readFileSync(cert) };
}

/** https on a free 127.0.0.1 port, forwarding every request to http://127.0.0.1:backendPort with the client's Host. */
async function tlsProxy(tls: { key: Buffer; cert: Buffer }, backendPort: number): Promise<https.Server> {
  const proxy = https.createServer(tls, (request, response) => {
    const headers = { ...request.headers, 'x-forwarded-proto': 'https' };
    const upstream = http.request(
      { host: '127.0.0.1', port: backendPort, method: request.method, path: request.url, headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', (error) => response.writeHead(502).end(error.message));
    request.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return proxy;
}

/** One https request to the proxy, sending `host` as the Host header (what a client of the public URL sends). */
function viaProxy(
  proxy: https.Server,
  ca: Buffer,
  request: { method: string; path: string; host: string; body?: string },
): Promise<{ status: number; body: string }> {
  const port = (proxy.address() as AddressInfo).port;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: request.host, 'content-type': 'application/json' };
    const sent = https.request(
      { host: '127.0.0.1', port, method: request.method, path: request.path, headers, ca, agent: false },
      (answer) => {
        let body = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => (body += chunk));
        answer.on('end', () => resolve({ status: answer.statusCode ?? 0, body }));
      },
    );
    sent.on('error', reject);
    sent.setTimeout(10_000, () => sent.destroy(new Error('no answer in 10 s')));
    sent.end(request.body);
  });
}

async function operator<T>(base: string, method: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-auth-token': TOKEN, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.ok(response.ok, `${method} ${path}: ${response.status} ${await response.clone().text()}`);
  return (await response.json()) as T;
}

test('--public-url https://HOST:443/: the URLs handed out name HOST as clients send it, and signed requests pass the proxy', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-public-url-'));
  const port = await freePort();
  const env = binEnv({ HEARTH_ADMIN_TOKEN: TOKEN, HEARTH_SECRET_KEY: 'test-secret-key-0123456789abcdef' });
  const args = [
    'serve',
    '--listen',
    `127.0.0.1:${port}`,
    '--data-dir',
    dir,
    '--public-url',
    'https://127.0.0.1:443/',
    '--log-level',
    'warn',
  ];
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const tls = certificate(dir);
  const proxy = await tlsProxy(tls, port);
  const backend = `http://127.0.0.1:${port}`;
  try {
    let ready = false;
    for (let attempt = 0; attempt < 300 && !ready && child.exitCode === null; attempt += 1) {
      ready = await fetch(`${backend}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(ready, `hearth-server answered /readyz (exit code ${child.exitCode})`);

    const created = await operator<{
      credential: { secret_access_key: string; access_key_id: string; metadata_url: string };
      os_collect_config: { cfn: { metadata_url: string; stack_name: string } };
    }>(backend, 'POST', '/v1/default/servers', { name: 'vm', id: 'vm-1', software_config_transport: 'POLL_SERVER_CFN' });

    // os-collect-config's cfn collector signs its metadata_url's netloc and path, as written; requests (like curl)
    // then sends `Host: 127.0.0.1`, the default port left out.
    const metadataUrl = created.os_collect_config.cfn.metadata_url;
    const netloc = /^https?:\/\/([^/]+)/.exec(metadataUrl)![1]!;
    const params: Record<string, string> = {
      Action: 'DescribeStackResource',
      StackName: created.os_collect_config.cfn.stack_name,
      LogicalResourceId: 'server',
      AWSAccessKeyId: created.credential.access_key_id,
      SignatureVersion: '2',
      SignatureMethod: 'HmacSHA256',
    };
    const signature = signV2(created.credential.secret_access_key, 'sha256', 'GET', netloc, '/v1/', params);
    const query = new URLSearchParams({ ...params, Signature: signature }).toString();
    const described = await viaProxy(proxy, tls.cert, { method: 'GET', path: `/v1/?${query}`, host: '127.0.0.1' });
    assert.equal(described.status, 200, described.body);
    assert.match(described.body, /<LogicalResourceId>server<\/LogicalResourceId>/);
    assert.equal(metadataUrl, 'https://127.0.0.1/v1/');
    assert.equal(created.credential.metadata_url, 'https://127.0.0.1/v1/guest/metadata');

    // Every URL a wait condition hands out names the host the same way, and its pre-signed handle is accepted.
    await operator(backend, 'POST', '/v1/default/stacks', { stack_name: 'st' });
    const waited = await operator<{ wait_condition: { handle: Record<string, string | null> } }>(
      backend,
      'POST',
      '/v1/default/stacks/st/wait_conditions',
      { name: 'wc', timeout: 600 },
    );
    const handle = waited.wait_condition.handle;
    for (const [name, value] of Object.entries(handle)) assert.doesNotMatch(String(value), /127\.0\.0\.1:443/, `handle.${name}`);
    const cfnUrl = new URL(handle.cfn_url!);
    assert.equal(cfnUrl.origin, 'https://127.0.0.1');
    const signalled = await viaProxy(proxy, tls.cert, {
      method: 'PUT',
      path: `${cfnUrl.pathname}${cfnUrl.search}`,
      host: '127.0.0.1',
      body: JSON.stringify({ Status: 'SUCCESS', Reason: 'ok', UniqueId: 'i1', Data: 'd' }),
    });
    assert.equal(signalled.status, 200, signalled.body);
  } finally {
    child.kill('SIGKILL');
    proxy.closeAllConnections();
    await new Promise((resolve) => proxy.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  }
});
