// EC2-signed requests through a real HTTP proxy on 127.0.0.1 in front of a listening app: one that rewrites
// Host to the backend's address (nginx's proxy_pass default) and one that strips the public URL's path prefix.
// Clients sign for the public URL, as os-collect-config's cfn collector, botocore and Heat's pre-signed URLs do.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { signV2 } from '@hearth/protocol/signing';
import { buildApp } from '../app.ts';
import { ADMIN, testStore } from '../test-support.ts';

interface Credential {
  key: string;
  secret: string;
}

interface Answer {
  status: number;
  body: string;
}

/** The app on a real 127.0.0.1 port, with `publicUrl`; `done` closes it and removes its store. */
async function listeningApp(publicUrl: string): Promise<{ app: FastifyInstance; port: number; done: () => Promise<void> }> {
  const store = await testStore();
  const app = await buildApp({
    dataDir: store.dataDir,
    databaseUrl: store.databaseUrl,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl,
    restartGraceMs: 0,
  }).catch(async (error: unknown) => {
    await store.remove();
    throw error;
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  return {
    app,
    port,
    async done() {
      try {
        await app.close();
      } finally {
        await store.remove();
      }
    },
  };
}

/**
 * A reverse proxy on a free 127.0.0.1 port forwarding to the backend: `rewriteHost` sends the backend's address
 * as Host (the client's is dropped), `stripPrefix` serves only paths under it and forwards them without it.
 */
async function reverseProxy(backendPort: number, options: { rewriteHost: boolean; stripPrefix?: string }): Promise<http.Server> {
  const proxy = http.createServer((request, response) => {
    let path = request.url ?? '/';
    if (options.stripPrefix !== undefined) {
      if (!path.startsWith(`${options.stripPrefix}/`)) {
        response.writeHead(404).end('not under the prefix');
        return;
      }
      path = path.slice(options.stripPrefix.length);
    }
    const headers = { ...request.headers, ...(options.rewriteHost ? { host: `127.0.0.1:${backendPort}` } : {}) };
    const upstream = http.request(
      { host: '127.0.0.1', port: backendPort, method: request.method, path, headers, agent: false },
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

async function closeProxy(proxy: http.Server): Promise<void> {
  proxy.closeAllConnections();
  await new Promise((resolve) => proxy.close(resolve));
}

/** One request to the proxy (always 127.0.0.1) sending `host` as its Host header, as a client of the public URL does. */
function viaProxy(
  proxy: http.Server,
  request: { method: string; path: string; host: string; headers?: Record<string, string>; body?: string },
): Promise<Answer> {
  const port = (proxy.address() as AddressInfo).port;
  return new Promise((resolve, reject) => {
    const headers = { host: request.host, 'content-type': 'application/json', ...request.headers };
    const sent = http.request({ host: '127.0.0.1', port, method: request.method, path: request.path, headers, agent: false }, (answer) => {
      let body = '';
      answer.setEncoding('utf8');
      answer.on('data', (chunk: string) => (body += chunk));
      answer.on('end', () => resolve({ status: answer.statusCode ?? 0, body }));
    });
    sent.on('error', reject);
    sent.setTimeout(10_000, () => sent.destroy(new Error('no answer in 10 s')));
    sent.end(request.body);
  });
}

/** Creates stack `web` with POLL_SERVER_CFN server `vm1` and wait condition `ready`; returns vm1's keys and the handle URL. */
async function fixtures(app: FastifyInstance): Promise<{ vm1: Credential; metadataUrl: string; handleUrl: URL }> {
  await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
  const server = await app.inject({
    method: 'POST',
    url: '/v1/default/servers',
    headers: ADMIN,
    payload: { name: 'vm1', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' },
  });
  assert.equal(server.statusCode, 201, server.body);
  const created = server.json<{ credential: Record<string, string>; os_collect_config: { cfn: { metadata_url: string } } }>();
  const waited = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/web/wait_conditions',
    headers: ADMIN,
    payload: { name: 'ready', count: 2, timeout: 600 },
  });
  assert.equal(waited.statusCode, 201, waited.body);
  return {
    vm1: { key: created.credential.access_key_id!, secret: created.credential.secret_access_key! },
    metadataUrl: created.os_collect_config.cfn.metadata_url,
    handleUrl: new URL(waited.json<{ wait_condition: { handle: { cfn_url: string } } }>().wait_condition.handle.cfn_url),
  };
}

/** DescribeStackResource of vm1 as os-collect-config's cfn collector sends it: v2, signed for `host` and `path`. */
function describeQuery(credential: Credential, host: string, path: string): string {
  const params: Record<string, string> = {
    Action: 'DescribeStackResource',
    StackName: 'web',
    LogicalResourceId: 'vm1',
    AWSAccessKeyId: credential.key,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  };
  params.Signature = signV2(credential.secret, 'sha256', 'GET', host, path, params);
  return new URLSearchParams(params).toString();
}

/** SigV4 headers for a form POST as botocore's query protocol sends it, signed for `host` and `path`. */
function sigV4Headers(credential: Credential, host: string, path: string, body: string, signedAt = new Date()): Record<string, string> {
  const amzDate = signedAt
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  const day = amzDate.slice(0, 8);
  const scope = `${day}/RegionOne/cloudformation/aws4_request`;
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
  const canonical = ['POST', path, '', `host:${host}\nx-amz-date:${amzDate}\n`, 'host;x-amz-date', sha256(body)].join('\n');
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const signingKey = [day, 'RegionOne', 'cloudformation', 'aws4_request'].reduce<Buffer>(
    (key, part) => createHmac('sha256', key).update(part).digest(),
    Buffer.from(`AWS4${credential.secret}`),
  );
  const signature = createHmac('sha256', signingKey).update(toSign).digest('hex');
  return {
    'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
    'x-amz-date': amzDate,
    authorization: `AWS4-HMAC-SHA256 Credential=${credential.key}/${scope},SignedHeaders=host;x-amz-date,Signature=${signature}`,
  };
}

const DESCRIBE_FORM = new URLSearchParams({ Action: 'DescribeStackResource', StackName: 'web', LogicalResourceId: 'vm1' }).toString();
const HANDLE_BODY = (id: string) => JSON.stringify({ Status: 'SUCCESS', Reason: 'ok', UniqueId: id, Data: 'd' });

function served(answer: Answer, what: string): void {
  assert.equal(answer.status, 200, `${what}: ${answer.body}`);
}

function denied(answer: Answer, what: string): void {
  assert.equal(answer.status, 403, `${what}: ${answer.body}`);
  assert.match(answer.body, /<Code>AccessDenied<\/Code>/, what);
}

test('a proxy that rewrites Host: requests signed for the public URL pass; other hosts, paths and secrets do not', async () => {
  const { app, port, done } = await listeningApp('https://hearth.test');
  const proxy = await reverseProxy(port, { rewriteHost: true });
  try {
    const { vm1, metadataUrl, handleUrl } = await fixtures(app);
    assert.equal(metadataUrl, 'https://hearth.test/v1/');
    const host = 'hearth.test';

    // os-collect-config's cfn collector: v2 over its metadata_url's netloc and path.
    served(await viaProxy(proxy, { method: 'GET', path: `/v1/?${describeQuery(vm1, host, '/v1/')}`, host }), 'cfn collector');
    // botocore: SigV4 with the host header it sends.
    const v4 = await viaProxy(proxy, {
      method: 'POST',
      path: '/v1/',
      host,
      headers: sigV4Headers(vm1, host, '/v1/', DESCRIBE_FORM),
      body: DESCRIBE_FORM,
    });
    served(v4, 'SigV4 form');
    assert.match(v4.body, /<LogicalResourceId>vm1<\/LogicalResourceId>/);
    // Heat's pre-signed handle URL, as hearth hands it out.
    const handlePath = `${handleUrl.pathname}${handleUrl.search}`;
    served(await viaProxy(proxy, { method: 'PUT', path: handlePath, host, body: HANDLE_BODY('a') }), 'pre-signed handle');

    // Signed for the public host 20 minutes ago: it matches, and is refused for its age, saying so.
    const old = sigV4Headers(vm1, host, '/v1/', DESCRIBE_FORM, new Date(Date.now() - 20 * 60_000));
    const stale = await viaProxy(proxy, { method: 'POST', path: '/v1/', host, headers: old, body: DESCRIBE_FORM });
    denied(stale, 'SigV4 signed 20 minutes ago');
    assert.match(stale.body, /sign it again/);

    // Signed for a host that is neither the one received nor the public one.
    denied(await viaProxy(proxy, { method: 'GET', path: `/v1/?${describeQuery(vm1, 'evil.test', '/v1/')}`, host }), 'another host');
    const otherHost = sigV4Headers(vm1, 'evil.test', '/v1/', DESCRIBE_FORM);
    denied(await viaProxy(proxy, { method: 'POST', path: '/v1/', host, headers: otherHost, body: DESCRIBE_FORM }), 'SigV4, another host');
    // Signed for the backend's own address (what the server receives) but over another path.
    const backendHost = `127.0.0.1:${port}`;
    denied(
      await viaProxy(proxy, { method: 'GET', path: `/v1/?${describeQuery(vm1, backendHost, '/v2/')}`, host }),
      'backend host, tampered path',
    );
    // The handle's signature replayed to another path.
    const replayed = `${handleUrl.pathname.replace(/\/resources\/ready$/, '/resources/other')}${handleUrl.search}`;
    assert.notEqual(replayed, handlePath);
    const replay = await viaProxy(proxy, { method: 'PUT', path: replayed, host, body: HANDLE_BODY('b') });
    assert.equal(replay.status, 403, replay.body);
    // The public host, a wrong secret.
    const wrong = { key: vm1.key, secret: 'not-the-secret' };
    denied(await viaProxy(proxy, { method: 'GET', path: `/v1/?${describeQuery(wrong, host, '/v1/')}`, host }), 'wrong secret');
  } finally {
    await closeProxy(proxy);
    await done();
  }
});

test('a public URL with a path prefix the proxy strips: requests signed for the prefixed path pass, Host kept or rewritten', async () => {
  const { app, port, done } = await listeningApp('https://hearth.test/hearth');
  const keepsHost = await reverseProxy(port, { rewriteHost: false, stripPrefix: '/hearth' });
  const rewritesHost = await reverseProxy(port, { rewriteHost: true, stripPrefix: '/hearth' });
  try {
    const { vm1, metadataUrl, handleUrl } = await fixtures(app);
    assert.equal(metadataUrl, 'https://hearth.test/hearth/v1/');
    assert.match(handleUrl.pathname, /^\/hearth\/v1\/waitcondition\//);
    const host = 'hearth.test';
    const handlePath = `${handleUrl.pathname}${handleUrl.search}`;

    for (const [proxy, how] of [
      [keepsHost, 'Host kept'],
      [rewritesHost, 'Host rewritten'],
    ] as const) {
      const describe = `/hearth/v1/?${describeQuery(vm1, host, '/hearth/v1/')}`;
      served(await viaProxy(proxy, { method: 'GET', path: describe, host }), `${how}: cfn collector`);
      const headers = sigV4Headers(vm1, host, '/hearth/v1/', DESCRIBE_FORM);
      served(await viaProxy(proxy, { method: 'POST', path: '/hearth/v1/', host, headers, body: DESCRIBE_FORM }), `${how}: SigV4 form`);
      served(await viaProxy(proxy, { method: 'PUT', path: handlePath, host, body: HANDLE_BODY(how) }), `${how}: pre-signed handle`);

      // Signed for another prefix, or for the prefix without the rest of the path.
      const otherPrefix = `/hearth/v1/?${describeQuery(vm1, host, '/other/v1/')}`;
      denied(await viaProxy(proxy, { method: 'GET', path: otherPrefix, host }), `${how}: another prefix`);
      const prefixOnly = `/hearth/v1/?${describeQuery(vm1, host, '/hearth/')}`;
      denied(await viaProxy(proxy, { method: 'GET', path: prefixOnly, host }), `${how}: the prefix alone`);
      const wrong = { key: vm1.key, secret: 'not-the-secret' };
      denied(
        await viaProxy(proxy, { method: 'GET', path: `/hearth/v1/?${describeQuery(wrong, host, '/hearth/v1/')}`, host }),
        `${how}: wrong secret`,
      );
    }
  } finally {
    await closeProxy(keepsHost);
    await closeProxy(rewritesHost);
    await done();
  }
});
