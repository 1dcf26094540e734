// cfn-signal as a real process against a loopback server that echoes the request line in its error
// replies (as some proxies and error pages do): the pre-signed URL's Signature never reaches stderr.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBin } from '../shared/run-bin.ts';

const SIGNATURE = 'S1GNATUREdeadbeef';

for (const status of [403, 500]) {
  test(`a ${status} reply that echoes the signed request is reported with its Signature hidden`, async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'cfn-signal-redaction-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    let requests = 0;
    const server = createServer((request, response) => {
      requests++;
      response.writeHead(status, { 'content-type': 'text/plain' });
      response.end(`refused: ${request.method} ${request.url}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const url = `${base}/v1/waitcondition/arn%3Ax?Timestamp=t&SignatureMethod=HmacSHA256&AWSAccessKeyId=AK&SignatureVersion=2&Signature=${SIGNATURE}`;
    const result = await runBin('cfn-signal', ['-i', 'vm1', '--retries', '1', '--retry-delay', '0.01', '-s', 'true', url], {
      env: { HEARTH_ROOT: root },
    });
    assert.equal(result.code, 1);
    assert.equal(requests, status === 500 ? 2 : 1);
    assert.match(
      result.stderr,
      new RegExp(`was not acknowledged: status ${status}: refused: PUT /v1/waitcondition/arn%3Ax\\?.*&Signature=\\*\\*\\*`),
    );
    assert.equal(result.stderr.includes(SIGNATURE), false, result.stderr);
  });
}
