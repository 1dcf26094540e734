import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { cfnSignalMain } from './main.ts';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A loopback recorder answering each request with the next status of `statuses` (the last one repeats). */
async function recorder(statuses: number[], headers: Record<string, string> = {}) {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const status = statuses[Math.min(seen.length - 1, statuses.length - 1)]!;
      res.writeHead(status, { 'content-type': 'application/json', ...(status === 200 ? {} : headers) });
      res.end(status === 200 ? '{}' : '{"Error": {"Code": "AccessDenied", "Message": "User is not authorized to perform action"}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/waitcondition/arn%3Ax?Signature=abc`;
  return { seen, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

function sink() {
  let text = '';
  const stream = new Writable({ write: (chunk: Buffer, _enc, done) => ((text += chunk.toString()), done()) });
  return { stream, text: () => text };
}

const noInstance = { HEARTH_ROOT: mkdtempSync(join(tmpdir(), 'cfn-signal-root-')) };

test('PUTs the body with no Content-Type to the URL as given; exits 0 on 2xx', async (t) => {
  const rec = await recorder([200]);
  t.after(() => rec.close());
  const code = await cfnSignalMain(['-i', 'vm1', '-r', 'done', '-d', 'x', rec.url], { env: noInstance, stderr: sink().stream });
  assert.equal(code, 0);
  assert.equal(rec.seen.length, 1);
  const [request] = rec.seen;
  assert.equal(request!.method, 'PUT');
  assert.equal(request!.url, '/v1/waitcondition/arn%3Ax?Signature=abc');
  assert.equal(request!.headers['content-type'], undefined);
  assert.equal(request!.body, '{"Status": "SUCCESS", "Reason": "done", "UniqueId": "vm1", "Data": "x"}');
});

test('the UniqueId defaults to the host name, or the uuid of a cached nova_meta.json', async (t) => {
  const rec = await recorder([200]);
  t.after(() => rec.close());
  await cfnSignalMain([rec.url], { env: noInstance, stderr: sink().stream });
  assert.equal((JSON.parse(rec.seen[0]!.body) as { UniqueId: string }).UniqueId, hostname());
  const root = mkdtempSync(join(tmpdir(), 'cfn-signal-root-'));
  mkdirSync(join(root, 'var/lib/heat-cfntools'), { recursive: true });
  writeFileSync(join(root, 'var/lib/heat-cfntools/nova_meta.json'), '{"uuid": "6b3d1c2a-0000-4000-8000-000000000001"}');
  await cfnSignalMain([rec.url], { env: { HEARTH_ROOT: root }, stderr: sink().stream });
  assert.equal((JSON.parse(rec.seen[1]!.body) as { UniqueId: string }).UniqueId, '6b3d1c2a-0000-4000-8000-000000000001');
});

test('a 403 is not retried and exits 1 printing the status and the reason', async (t) => {
  const rec = await recorder([403]);
  t.after(() => rec.close());
  await assert.rejects(
    cfnSignalMain(['-i', 'vm1', rec.url], { env: noInstance, stderr: sink().stream }),
    (error: { exitCode: number; message: string }) =>
      error.exitCode === 1 &&
      /not acknowledged: status 403: AccessDenied: User is not authorized/.test(error.message) &&
      !error.message.includes('abc'),
  );
  assert.equal(rec.seen.length, 1);
});

test('5xx is retried with a doubling delay until acknowledged; past --retries the last status is the outcome', async (t) => {
  const rec = await recorder([503, 500, 200]);
  t.after(() => rec.close());
  const err = sink();
  const code = await cfnSignalMain(['-i', 'vm1', '--retries', '2', '--retry-delay', '0.01', rec.url], {
    env: noInstance,
    stderr: err.stream,
  });
  assert.equal(code, 0);
  assert.equal(rec.seen.length, 3);
  assert.match(err.text(), /attempt 1 failed \(status 503\); retrying in 10 ms\n.*attempt 2 failed \(status 500\); retrying in 20 ms/s);

  const failing = await recorder([502]);
  t.after(() => failing.close());
  await assert.rejects(
    cfnSignalMain(['-i', 'vm1', '--retries', '1', '--retry-delay', '0', failing.url], { env: noInstance, stderr: sink().stream }),
    /status 502/,
  );
  assert.equal(failing.seen.length, 2);
});

test('a 429 is retried after its Retry-After, not taken as the answer', async (t) => {
  const rec = await recorder([429, 200], { 'retry-after': '1' });
  t.after(() => rec.close());
  const err = sink();
  const started = performance.now();
  const code = await cfnSignalMain(['-i', 'vm1', '--retries', '2', '--retry-delay', '0.01', rec.url], {
    env: noInstance,
    stderr: err.stream,
  });
  assert.equal(code, 0, err.text());
  assert.equal(rec.seen.length, 2);
  assert.ok(performance.now() - started >= 990, 'waited the Retry-After, not the 10 ms backoff');
  assert.match(err.text(), /attempt 1 failed \(status 429\); retrying in 1000 ms/);
});

test('a refused connection is retried, then exits 7 as curl does', async () => {
  const err = sink();
  await assert.rejects(
    cfnSignalMain(['-i', 'vm1', '--retries', '1', '--retry-delay', '0', 'http://127.0.0.1:9/v1/waitcondition/x'], {
      env: noInstance,
      stderr: err.stream,
    }),
    (error: { exitCode: number; message: string }) => error.exitCode === 7 && /ECONNREFUSED|refused/.test(error.message),
  );
  assert.match(err.text(), /attempt 1 failed/);
});
