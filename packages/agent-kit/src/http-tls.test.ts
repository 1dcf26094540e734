// httpRequest over https against a real node:https server on 127.0.0.1 with a certificate made by openssl.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeHttpConnections, httpRequest, HttpRequestError } from './http.ts';

test.after(() => closeHttpConnections());

/** A self-signed certificate for 127.0.0.1 (its own CA), made with openssl. */
function certificate(): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'agent-kit-tls-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.pem');
    const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'];
    const made = spawnSync('openssl', [...args, '-addext', 'subjectAltName=IP:127.0.0.1'], {
      encoding: 'utf8',
      timeout: 30_000,
      input: '',
    });
    assert.equal(made.status, 0, made.stderr);
    return { key: readFileSync(key), cert: readFileSync(cert) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function listening<T extends http.Server>(server: T): Promise<{ server: T; port: number }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

async function closed(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

test('an untrusted certificate fails as a network error that says it is TLS and how to give the CA; with the CA it passes', async () => {
  const tls = certificate();
  const { server, port } = await listening(https.createServer(tls, (_request, response) => response.end('ok')));
  try {
    const url = `https://127.0.0.1:${port}/v1/guest/metadata?token=s3cret`;
    const error = await httpRequest({ url }).then(
      () => assert.fail('a self-signed certificate was accepted without its CA'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof HttpRequestError);
    // Still ERR_HTTP_NETWORK: the outbox keeps a signal that met it, and tries again later.
    assert.equal(error.code, 'ERR_HTTP_NETWORK');
    assert.equal(error.systemCode, 'DEPTH_ZERO_SELF_SIGNED_CERT');
    assert.match(
      error.message,
      new RegExp(
        `^GET https://127\\.0\\.0\\.1:${port}/v1/guest/metadata\\?token=\\*\\*\\* failed: the TLS certificate of 127\\.0\\.0\\.1:${port} is not trusted ` +
          '\\(DEPTH_ZERO_SELF_SIGNED_CERT: self[- ]signed certificate\\): give the CA that signed it \\(NODE_EXTRA_CA_CERTS=',
      ),
    );
    assert.doesNotMatch(error.message, /s3cret/);
    const trusted = await httpRequest({ url, ca: tls.cert });
    assert.equal(trusted.text(), 'ok');
  } finally {
    await closed(server);
  }
});

test('an https URL for a plain-HTTP port says to use http://', async () => {
  const { server, port } = await listening(http.createServer((_request, response) => response.end('plain')));
  try {
    const error = await httpRequest({ url: `https://127.0.0.1:${port}/`, timeoutMs: 5000 }).then(
      () => assert.fail('TLS to a plain-HTTP port succeeded'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof HttpRequestError);
    assert.equal(error.code, 'ERR_HTTP_NETWORK');
    assert.match(
      error.message,
      /failed: TLS with 127\.0\.0\.1:\d+ failed \((EPROTO|ERR_SSL_[A-Z_]+): .*\): if the server speaks plain HTTP there, use an http:\/\/ URL/,
    );
  } finally {
    await closed(server);
  }
});
