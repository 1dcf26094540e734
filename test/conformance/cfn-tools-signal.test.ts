// Side by side: hearth's cfn-signal (packages/cfn-tools) and Debian's (heat-cfntools 1.4.2, curl) send the
// same request for the same flags (loopback recorder), and both complete one hearth-server wait condition.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBin } from '../../packages/cfn-tools/src/shared/run-bin.ts';
import { startServer } from '../helpers/server.ts';
import { operatorApi, runClient, skipUnlessClients } from './clients.ts';

const skip = skipUnlessClients();
const env = { HEARTH_ROOT: mkdtempSync(join(tmpdir(), 'cfn-tools-signal-')) };

interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

async function recorder() {
  const seen: Recorded[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { seen, port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** What must be equal between the two clients: everything but the transport headers (user-agent, accept, connection). */
function essentials(request: Recorded) {
  return {
    method: request.method,
    url: request.url,
    body: request.body,
    contentType: request.headers['content-type'],
    contentLength: request.headers['content-length'],
    host: request.headers.host,
  };
}

const CASES: Array<{ name: string; flags: string[] }> = [
  { name: 'defaults', flags: ['-i', 'vm1'] },
  { name: 'failure by -e with reason and data', flags: ['-i', 'vm-2', '-e', '3', '-r', 'disk full', '-d', '{"looks": "like JSON"}'] },
  { name: '-s false and non-ASCII', flags: ['--id', 'ünïcode', '-s', 'false', '--reason', 'échec "quoted"', '--data', 'line1\nline2'] },
  { name: '-e 0 wins over -s false', flags: ['-i', 'x', '-s', 'false', '-e', '0'] },
];

test('cfn-signal: ours sends the same PUT (path, query, body, no Content-Type) as Debian’s for the same flags', { skip }, async (t) => {
  const rec = await recorder();
  t.after(() => rec.close());
  const url = `http://127.0.0.1:${rec.port}/v1/waitcondition/arn%3Aopenstack%3Aheat%3A%3Ap%3Astacks/web/id/resources/ready?SignatureMethod=HmacSHA256&SignatureVersion=2&AWSAccessKeyId=ak&Timestamp=2026-01-01T00%3A00%3A00Z&Signature=a%2Bb%3D`;
  for (const { name, flags } of CASES) {
    rec.seen.length = 0;
    const theirs = await runClient(['cfn-signal', ...flags, url]);
    assert.equal(theirs.exitCode, 0, `${name}: ${theirs.stderr}`);
    const ours = await runBin('cfn-signal', [...flags, url], { env });
    assert.equal(ours.code, 0, `${name}: ${ours.stderr}`);
    assert.equal(rec.seen.length, 2, name);
    const [theirRequest, ourRequest] = rec.seen.map(essentials);
    assert.equal(theirRequest!.contentType, undefined, `${name}: Debian sends no Content-Type`);
    assert.deepEqual(ourRequest, theirRequest, name);
  }
});

test('cfn-signal: Debian’s and ours each signal one hearth wait condition of count 2, which completes with both', { skip }, async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  await api.createStack('web');
  const url = (await api.createWaitCondition('web', { name: 'ready', count: 2, timeout: 600 })).handle.cfn_url;

  const theirs = await runClient(['cfn-signal', '-i', 'debian', '-r', 'theirs', '-d', 'd1', url]);
  assert.equal(theirs.exitCode, 0, theirs.stderr);
  assert.equal((await api.waitCondition('web', 'ready')).received, 1);
  const ours = await runBin('cfn-signal', ['-i', 'hearth', '-r', 'ours', '-d', 'd2', url], { env });
  assert.equal(ours.code, 0, ours.stderr);

  const done = await api.waitCondition('web', 'ready');
  assert.equal(done.status, 'COMPLETE');
  assert.deepEqual(done.data, { debian: 'd1', hearth: 'd2' });
  assert.deepEqual(
    done.signals.map((s) => [s.id, s.status, s.reason]),
    [
      ['debian', 'SUCCESS', 'theirs'],
      ['hearth', 'SUCCESS', 'ours'],
    ],
  );

  // Where they differ: a signal the server refuses (the condition is already complete).
  const lateTheirs = await runClient(['cfn-signal', '-i', 'late1', url]);
  const lateOurs = await runBin('cfn-signal', ['-i', 'late2', url], { env });
  assert.equal(lateTheirs.exitCode, 0, 'Debian’s exits 0 whatever the status');
  assert.equal(lateOurs.code, 1, 'ours reports the refusal');
  assert.match(lateOurs.stderr, /not acknowledged: status 4\d\d/);
});
