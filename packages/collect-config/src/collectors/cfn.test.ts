import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createFileSecretStore } from '@hearth/agent-kit';
import { verifyEc2Signature } from '@hearth/protocol/signing';
import { contextFor, fakeServer, optionsFor, tempDir, type SeenRequest } from '../test-support/fixtures.ts';
import { cfnCollector, signV2Get } from './cfn.ts';

const SECRET = 'secret/with+chars=';
const METADATA = { deployments: [{ name: 'd', group: 'Heat::Ungrouped', config: { a: '<&>' } }], 'os-collect-config': { x: { y: 1 } } };

function xmlEscape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function describeReply(metadata: unknown): string {
  return `<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail><StackName>web</StackName><Metadata>${xmlEscape(JSON.stringify(metadata))}</Metadata></StackResourceDetail></DescribeStackResourceResult></DescribeStackResourceResponse>`;
}

function verified(request: SeenRequest): boolean {
  const url = new URL(request.url, 'http://x');
  return verifyEc2Signature(
    {
      method: request.method,
      host: request.headers.host ?? '',
      path: url.pathname,
      params: Object.fromEntries(url.searchParams),
      headers: request.headers,
    },
    SECRET,
  ).ok;
}

async function cfnServer() {
  return fakeServer((request, response) => {
    if (!verified(request)) {
      response.writeHead(403, { 'content-type': 'application/xml' });
      return void response.end('<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code></Error></ErrorResponse>');
    }
    response.writeHead(200, { 'content-type': 'application/xml' });
    response.end(describeReply(METADATA));
  });
}

test("cfn: a v2-signed DescribeStackResource (verified by hearth-server's verifier), XML parsed, exploded", async () => {
  const server = await cfnServer();
  try {
    const argv = ['--cfn-metadata-url', `${server.url}/v1/`, '--cfn-access-key-id', 'AK1', '--cfn-secret-access-key', SECRET];
    const ctx = contextFor(optionsFor([...argv, '--cfn-stack-name', 'web', '--cfn-path', 'vm1.Metadata']));
    assert.deepEqual(await cfnCollector.collect(ctx), {
      kind: 'data',
      outputs: [
        ['cfn', METADATA],
        ['d', { a: '<&>' }],
      ],
    });
    const [request] = server.requests;
    assert.equal(request!.headers['content-type'], 'application/json');
    assert.deepEqual(
      [...new URL(request!.url, 'http://x').searchParams.keys()],
      ['Action', 'StackName', 'LogicalResourceId', 'AWSAccessKeyId', 'SignatureVersion', 'SignatureMethod', 'Signature'],
    );
    const sub = contextFor(optionsFor([...argv, '--cfn-stack-name', 'web', '--cfn-path', 'vm1.Metadata.os-collect-config']));
    assert.deepEqual(await cfnCollector.collect(sub), { kind: 'data', outputs: [['cfn', { x: { y: 1 } }]] });
    const wrong = contextFor(optionsFor([...argv.slice(0, 4), '--cfn-secret-access-key', 'wrong', '--cfn-path', 'vm1.Metadata']));
    assert.deepEqual(await cfnCollector.collect(wrong), { kind: 'unavailable', reason: 'DescribeStackResource answered 403' });
    const missing = contextFor(optionsFor([...argv, '--cfn-path', 'vm1.Nothing']));
    assert.deepEqual(await cfnCollector.collect(missing), { kind: 'unavailable', reason: 'Path vm1.Nothing does not exist.' });
    const badKey = contextFor(optionsFor([...argv, '--cfn-path', 'vm1.Metadata.nope']));
    assert.deepEqual(await cfnCollector.collect(badKey), {
      kind: 'unavailable',
      reason: 'Sub-key nope does not exist. (vm1.Metadata.nope)',
    });
  } finally {
    await server.close();
  }
});

test('cfn: not configured without URL, keys or a dotted path; the hint file supplies the URL', async () => {
  const notConfigured = async (argv: string[]) => (await cfnCollector.collect(contextFor(optionsFor(argv)))).kind;
  const keys = ['--cfn-access-key-id', 'AK', '--cfn-secret-access-key', 'S'];
  assert.equal(await notConfigured([...keys, '--cfn-path', 'a.b']), 'not-configured');
  assert.equal(await notConfigured(['--cfn-metadata-url', 'http://127.0.0.1:9/v1/', '--cfn-path', 'a.b']), 'not-configured');
  assert.equal(await notConfigured(['--cfn-metadata-url', 'http://127.0.0.1:9/v1/', ...keys]), 'not-configured');
  assert.equal(await notConfigured(['--cfn-metadata-url', 'http://127.0.0.1:9/v1/', ...keys, '--cfn-path', 'nodot']), 'not-configured');

  const server = await cfnServer();
  try {
    const hint = join(tempDir(), 'cfn-metadata-server');
    writeFileSync(hint, `${server.url}\n`);
    const ctx = contextFor(
      optionsFor([
        '--cfn-heat-metadata-hint',
        hint,
        '--cfn-access-key-id',
        'AK',
        '--cfn-secret-access-key',
        SECRET,
        '--cfn-path',
        'vm1.Metadata',
      ]),
    );
    assert.equal((await cfnCollector.collect(ctx)).kind, 'data');
    assert.match(server.requests[0]!.url, /^\/v1\/\?Action=DescribeStackResource&/);
  } finally {
    await server.close();
  }
});

test('signV2Get signs as keystoneclient Ec2Signer: sorted, quote(safe="-_~"), netloc with port', () => {
  // hmac-sha256 base64 of "GET\nh:80\n/v1/\nA=1&B=x%20y&SignatureMethod=HmacSHA256" with key "k", computed with
  // Python's hmac module (the signer always signs SignatureMethod, as os-collect-config always sends it).
  assert.equal(
    signV2Get('k', 'http://h:80/v1/', { B: 'x y', A: '1', SignatureMethod: 'HmacSHA256' }),
    '54oqiKCBMP894bMJazlwzPDj7qXrY5R4BF2RFliOsIc=',
  );
});

test('cfn: without secret_access_key the secret is read from [cfn] secret_store as cfn/<access_key_id>', async () => {
  const server = await cfnServer();
  try {
    const root = tempDir();
    const storePath = join(root, 'credentials.json');
    const argv = [
      '--cfn-metadata-url',
      `${server.url}/v1/`,
      '--cfn-access-key-id',
      'AK1',
      '--cfn-path',
      'vm1.Metadata',
      '--cfn-secret-store',
      'file',
      '--cfn-secret-store-path',
      storePath,
    ];
    const missing = await cfnCollector.collect(contextFor(optionsFor(argv, root)));
    assert.deepEqual(missing, {
      kind: 'unavailable',
      reason: `no secret "cfn/AK1" in ${storePath} ([cfn] secret_store = file); store it with: hearth-agent secret --path ${storePath} set cfn/AK1 < FILE`,
    });
    assert.equal(server.requests.length, 0, 'nothing is sent unsigned');
    await createFileSecretStore(storePath).set('cfn/AK1', SECRET);
    const ctx = contextFor(optionsFor(argv, root));
    assert.equal((await cfnCollector.collect(ctx)).kind, 'data');
    assert.ok(verified(server.requests[0]!), 'signed with the stored secret');
    chmodSync(storePath, 0o640);
    const unsafe = await cfnCollector.collect(ctx);
    assert.equal(unsafe.kind, 'unavailable');
    assert.match((unsafe as { reason: string }).reason, /refusing to use secret file .* has mode 0640, wider than 0600; fix: chmod 600 /);
    assert.ok(!JSON.stringify([unsafe, ctx.log.lines]).includes(SECRET));
  } finally {
    await server.close();
  }
});

/** A self-signed certificate for 127.0.0.1 (its own CA, the address in its SAN), made with openssl: the PEM paths. */
function selfSignedCertificate(): { key: string; cert: string } {
  const dir = tempDir();
  const key = join(dir, 'key.pem');
  const cert = join(dir, 'cert.pem');
  const args = ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1'];
  const made = spawnSync('openssl', [...args, '-addext', 'subjectAltName=IP:127.0.0.1'], { encoding: 'utf8', timeout: 30_000, input: '' });
  assert.equal(made.status, 0, made.stderr);
  return { key, cert };
}

test("cfn: an https metadata_url is trusted through [cfn] ca_certificate, as the original's verify=ca_certificate", async () => {
  const { key, cert } = selfSignedCertificate();
  const server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (request, response) => {
    response.writeHead(200, { 'content-type': 'application/xml' });
    response.end(describeReply(METADATA));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
    const argv = ['--cfn-metadata-url', url, '--cfn-access-key-id', 'AK1', '--cfn-secret-access-key', SECRET, '--cfn-path', 'vm1.Metadata'];
    const trusted = await cfnCollector.collect(contextFor(optionsFor([...argv, '--cfn-ca_certificate', cert])));
    assert.equal(trusted.kind, 'data', JSON.stringify(trusted));
    const untrusted = await cfnCollector.collect(contextFor(optionsFor(argv)));
    assert.equal(untrusted.kind, 'unavailable', 'without the CA the self-signed certificate is refused');
    const missing = join(tempDir(), 'no-ca.pem');
    assert.deepEqual(await cfnCollector.collect(contextFor(optionsFor([...argv, '--cfn-ca_certificate', missing]))), {
      kind: 'unavailable',
      reason: `[cfn] ca_certificate ${missing} cannot be read (ENOENT: no such file or directory, open '${missing}')`,
    });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
