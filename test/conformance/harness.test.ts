// The harness itself, against a loopback recorder: each real client runs in the sandbox, reaches
// 127.0.0.1, sends what reference/observed-clients.md says, and nothing else is reachable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { assertSafe, isolation, runClient, skipUnlessClients } from './clients.ts';

interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A loopback HTTP server that records every request and answers with `reply`. */
async function startRecorder(reply: (request: Recorded, response: ServerResponse) => void = (_, response) => response.end('{}')) {
  const requests: Recorded[] = [];
  const server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      const recorded = { method: request.method!, url: request.url!, headers: request.headers, body };
      requests.push(recorded);
      reply(recorded, response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const skip = skipUnlessClients();

test('cfn-signal sends PUT with the four CFN keys, no Content-Type, to the URL as given', { skip }, async () => {
  const recorder = await startRecorder();
  try {
    const target = `${recorder.url}/v1/waitcondition/arn%3Aopenstack%3Aheat%3A%3Ap%3Astacks%2Fweb%2F1%2Fresources%2Fh?Signature=abc%2B`;
    const run = await runClient(['cfn-signal', '-i', 'vm1', '-r', 'all good', '-d', '{"not": "parsed"}', target]);
    assert.equal(run.exitCode, 0, run.stderr);
    assert.equal(recorder.requests.length, 1);
    const [request] = recorder.requests;
    assert.equal(request!.method, 'PUT');
    assert.equal(request!.url, target.slice(recorder.url.length));
    assert.equal(request!.headers['content-type'], undefined);
    assert.deepEqual(JSON.parse(request!.body), { Status: 'SUCCESS', Reason: 'all good', UniqueId: 'vm1', Data: '{"not": "parsed"}' });

    const failed = await runClient(['cfn-signal', '-i', 'vm2', '-s', 'true', '-e', '3', '-r', 'disk full', target]);
    assert.equal(failed.exitCode, 0, failed.stderr);
    assert.equal(JSON.parse(recorder.requests[1]!.body).Status, 'FAILURE', '-e wins over -s');
  } finally {
    await recorder.close();
  }
});

test('cfn-signal exits 0 on an HTTP error and non-zero when nothing listens', { skip }, async () => {
  const recorder = await startRecorder((_, response) => {
    response.statusCode = 403;
    response.end('denied');
  });
  const url = `${recorder.url}/v1/waitcondition/x`;
  try {
    assert.equal((await runClient(['cfn-signal', '-i', 'vm1', url])).exitCode, 0);
  } finally {
    await recorder.close();
  }
  const refused = await runClient(['cfn-signal', '-i', 'vm1', url]);
  assert.notEqual(refused.exitCode, 0, 'curl cannot connect once the recorder is gone');
});

test('cfn-get-metadata takes host and port from the boto files, signs SigV4, prints the Metadata', { skip }, async () => {
  const metadata = { deployments: [{ id: 'd-1', name: 'install', group: 'script' }], 'os-collect-config': {} };
  const recorder = await startRecorder((request, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(
      JSON.stringify({ DescribeStackResourceResponse: { DescribeStackResourceResult: { StackResourceDetail: { Metadata: metadata } } } }),
    );
  });
  try {
    const run = await runClient(['cfn-get-metadata', '--access-key', 'AK1', '--secret-key', 'SK1', '-s', 'web', '-r', 'vm1'], {
      files: {
        '/var/lib/heat-cfntools/cfn-boto-cfg':
          '[Boto]\ndebug = 0\nis_secure = 0\nhttps_validate_certificates = 1\ncfn_region_name = heat\ncfn_region_endpoint = 127.0.0.1\n',
        '/var/lib/heat-cfntools/cfn-metadata-server': recorder.url,
      },
    });
    assert.equal(run.exitCode, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), metadata);
    const [request] = recorder.requests;
    const query = new URL(request!.url, recorder.url).searchParams;
    assert.equal(new URL(request!.url, recorder.url).pathname, '/v1/');
    assert.equal(query.get('Action'), 'DescribeStackResource');
    assert.equal(query.get('StackName'), 'web');
    assert.equal(query.get('LogicalResourceId'), 'vm1');
    assert.match(String(request!.headers.authorization), /^AWS4-HMAC-SHA256 Credential=AK1\//);
    assert.ok(run.written['/var/cache/heat-cfntools/last_metadata_vm1'], 'the metadata cache is written inside the sandbox');
  } finally {
    await recorder.close();
  }
});

test('os-collect-config --print with the request collector: HEAD then GET, prints the collected JSON', { skip }, async () => {
  const document = { deployments: [{ id: 'd-1', name: 'install', group: 'script', config: 'echo hi' }] };
  const recorder = await startRecorder((_, response) => {
    response.setHeader('content-type', 'application/json');
    response.end(JSON.stringify(document));
  });
  try {
    const run = await runClient([
      'os-collect-config',
      '--print',
      '--cachedir',
      '@SCRATCH@/cache',
      '--backup-cachedir',
      '@SCRATCH@/backup',
      '--request-metadata-url',
      `${recorder.url}/temp/metadata?temp_url_sig=x`,
      'request',
    ]);
    assert.equal(run.exitCode, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), { request: document });
    assert.deepEqual(
      recorder.requests.map((r) => r.method),
      ['HEAD', 'GET'],
    );
  } finally {
    await recorder.close();
  }
});

test('the sandbox reaches only the named loopback ports and keeps writes private', { skip }, async (t) => {
  if (isolation() !== 'namespace') return t.skip('no private namespaces on this machine (not root?)');
  const connectTo = (host: string, port: number, forwarded: number[]) =>
    runClient(
      [
        'python3',
        '-c',
        `import socket\ntry:\n socket.create_connection(("${host}", ${port}), timeout=2); print("connected")\nexcept OSError as e:\n print("refused", e.errno)`,
      ],
      { ports: forwarded },
    );
  const recorder = await startRecorder();
  try {
    const port = Number(new URL(recorder.url).port);
    assert.match((await connectTo('127.0.0.1', port, [port])).stdout, /^connected/, 'a forwarded port is reachable');
    assert.match((await connectTo('127.0.0.1', port, [])).stdout, /^refused 111/, 'ECONNREFUSED: other host ports are not');
    assert.match((await connectTo('192.0.2.1', 80, [])).stdout, /^refused 101/, 'ENETUNREACH: no route off the loopback');
  } finally {
    await recorder.close();
  }
  const writes = await runClient([
    'sh',
    '-c',
    'mkdir -p /etc/cfn && echo secret > /etc/cfn/cfn-credentials && cat /etc/cfn/cfn-credentials',
  ]);
  assert.equal(writes.stdout, 'secret\n');
  assert.equal(writes.written['/etc/cfn/cfn-credentials'], 'secret\n');
  assert.equal((await runClient(['sh', '-c', 'test -e /etc/cfn/cfn-credentials; echo $?'])).stdout, '1\n', 'the next run starts clean');
});

test('a hung client is killed at the timeout, with its whole process group', async () => {
  const run = await runClient(['sh', '-c', 'sleep 30 & sleep 30'], { timeoutMs: 500 });
  assert.equal(run.timedOut, true);
  assert.ok(run.durationMs < 5000, `killed after ${run.durationMs} ms`);
  assert.notEqual(run.exitCode, 0);
});

test('unsafe runs are refused before anything starts', () => {
  assert.throws(() => assertSafe(['cfn-signal', 'http://127.0.0.1:1/x'], []), /needs -i/);
  assert.throws(() => assertSafe(['cfn-push-stats', '--heartbeat'], []), /cfn-push-stats/);
  assert.throws(() => assertSafe(['os-collect-config', '--one-time', 'ec2', 'cfn'], []), /loopback collectors/);
  assert.throws(() => assertSafe(['os-collect-config', '--one-time'], []), /positional/);
  assert.throws(() => assertSafe(['os-collect-config', 'request'], []), /--one-time or --print/);
  assert.throws(() => assertSafe(['cfn-signal', '-i', 'x', 'u'], ['http://169.254.169.254/latest']), /link-local/);
  assert.doesNotThrow(() => assertSafe(['cfn-signal', '-i', 'vm1', 'http://127.0.0.1:1/x'], []));
  assert.doesNotThrow(() => assertSafe(['os-collect-config', '--print', 'request'], []));
});
