// cfn-init run as a real process against a loopback server: the signatures of pre-signed `sources` and
// files' `source` URLs (S3 X-Amz-Signature and security token, Swift temp_url_sig) never reach its
// stderr or /var/log/cfn-init.log, whether the download works or fails.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBin } from '../shared/run-bin.ts';

const SECRETS = ['S3SIGNATUREc0ffee', 'S3SESSIONTOKENbeef', 'SWIFTTEMPSIGfeed'];

/** A server on 127.0.0.1 answering every request with `status` and `body`. */
async function serve(t: { after: (fn: () => Promise<void>) => void }, status: number, body: Buffer): Promise<string> {
  const server = createServer((_request, response) => {
    response.writeHead(status);
    response.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function sandbox(t: { after: (fn: () => void) => void }) {
  const root = mkdtempSync(join(tmpdir(), 'cfn-init-redaction-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const tree = join(root, 'tree');
  mkdirSync(tree);
  writeFileSync(join(tree, 'a.txt'), 'a\n');
  execFileSync('tar', ['-c', '-z', '-f', join(root, 'a.tgz'), '-C', tree, '.']);
  return { root, tarball: readFileSync(join(root, 'a.tgz')) };
}

function writeMetadata(root: string, base: string): void {
  const config = {
    sources: {
      [join(root, 'unpacked')]:
        `${base}/bucket/a.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20260101%2Fs3%2Faws4_request` +
        `&X-Amz-Signature=${SECRETS[0]}&X-Amz-Security-Token=${SECRETS[1]}`,
    },
    files: { [join(root, 'fetched.txt')]: { source: `${base}/v1/AUTH_p/c/f.txt?temp_url_sig=${SECRETS[2]}&temp_url_expires=9999999999` } },
  };
  mkdirSync(join(root, 'var/lib/heat-cfntools'), { recursive: true });
  writeFileSync(join(root, 'var/lib/heat-cfntools/cfn-init-data'), JSON.stringify({ 'AWS::CloudFormation::Init': { config } }));
}

function assertNoSecret(text: string, where: string): void {
  for (const secret of SECRETS) assert.equal(text.includes(secret), false, `${where} shows ${secret}:\n${text}`);
}

test('a pre-signed source URL that downloads is logged with its signature and token hidden', async (t) => {
  const box = sandbox(t);
  writeMetadata(box.root, await serve(t, 200, box.tarball));
  const result = await runBin('cfn-init', ['-v'], { env: { HEARTH_ROOT: box.root } });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(readFileSync(join(box.root, 'unpacked/a.txt'), 'utf8'), 'a\n');
  assert.match(result.stderr, /"msg":"source unpacked".*X-Amz-Signature=\*\*\*&X-Amz-Security-Token=\*\*\*/);
  assertNoSecret(result.stderr, 'stderr');
  assertNoSecret(readFileSync(join(box.root, 'var/log/cfn-init.log'), 'utf8'), 'cfn-init.log');
});

test('a pre-signed source URL that fails (HTTP 500) is reported with its signature and token hidden', async (t) => {
  const box = sandbox(t);
  writeMetadata(box.root, await serve(t, 500, Buffer.from('internal error')));
  const result = await runBin('cfn-init', ['-v', '--log-format', 'text'], { env: { HEARTH_ROOT: box.root } });
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^cfn-init: sources: .*could not download http:\/\/127\.0\.0\.1:\d+\/bucket\/a\.tar\.gz\?.*X-Amz-Signature=\*\*\*/m,
  );
  assert.match(result.stderr, /answered HTTP 500/);
  assertNoSecret(result.stderr, 'stderr');
  assertNoSecret(readFileSync(join(box.root, 'var/log/cfn-init.log'), 'utf8'), 'cfn-init.log');
});

test("a file's temp-URL source that fails is reported with its temp_url_sig hidden", async (t) => {
  const box = sandbox(t);
  const base = await serve(t, 403, Buffer.from('denied'));
  mkdirSync(join(box.root, 'var/lib/heat-cfntools'), { recursive: true });
  const files = { [join(box.root, 'fetched.txt')]: { source: `${base}/v1/AUTH_p/c/f.txt?temp_url_sig=${SECRETS[2]}&temp_url_expires=1` } };
  writeFileSync(
    join(box.root, 'var/lib/heat-cfntools/cfn-init-data'),
    JSON.stringify({ 'AWS::CloudFormation::Init': { config: { files } } }),
  );
  const result = await runBin('cfn-init', ['-v'], { env: { HEARTH_ROOT: box.root } });
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /could not download http:\/\/127\.0\.0\.1:\d+\/v1\/AUTH_p\/c\/f\.txt\?temp_url_sig=\*\*\*&temp_url_expires=1/,
  );
  assertNoSecret(result.stderr, 'stderr');
  assertNoSecret(readFileSync(join(box.root, 'var/log/cfn-init.log'), 'utf8'), 'cfn-init.log');
});
