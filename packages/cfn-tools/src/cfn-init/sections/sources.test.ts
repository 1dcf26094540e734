import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { processRunner, StepError } from '../context.ts';
import { fetchUrl } from '../fetch-url.ts';
import { fakeContext, recordingRunner } from '../testing.ts';
import { applySources, sourceTypeFromContent, sourceTypeFromUrl } from './sources.ts';

test('types come from the URL: extensions and GitHub tarball/zipball URLs', () => {
  assert.equal(sourceTypeFromUrl('http://h/a.tar.gz?x=1'), 'tgz');
  assert.equal(sourceTypeFromUrl('http://h/a.TGZ'), 'tgz');
  assert.equal(sourceTypeFromUrl('http://h/a.tar.bz2'), 'tbz2');
  assert.equal(sourceTypeFromUrl('http://h/a.tar'), 'tar');
  assert.equal(sourceTypeFromUrl('http://h/a.zip'), 'zip');
  assert.equal(sourceTypeFromUrl('http://h/a.gz'), 'gz');
  assert.equal(sourceTypeFromUrl('http://h/a.bz2'), 'bz2');
  assert.equal(sourceTypeFromUrl('https://github.com/o/r/tarball/main'), 'tgz');
  assert.equal(sourceTypeFromUrl('https://api.github.com/repos/o/r/zipball/v1/'), 'zip');
  assert.equal(sourceTypeFromUrl('http://h/download?id=3'), undefined);
});

/** Builds archives of one tree with the real tools: tar, tar.gz, tar.bz2, zip; and a single gzip file. */
function archives(root: string): Record<string, Buffer> {
  const tree = join(root, 'tree');
  mkdirSync(join(tree, 'sub'), { recursive: true });
  writeFileSync(join(tree, 'top.txt'), 'top\n');
  writeFileSync(join(tree, 'sub', 'deep.txt'), 'deep\n');
  execFileSync('tar', ['-c', '-f', join(root, 'a.tar'), '-C', tree, '.']);
  execFileSync('tar', ['-c', '-z', '-f', join(root, 'a.tgz'), '-C', tree, '.']);
  execFileSync('tar', ['-c', '-j', '-f', join(root, 'a.tbz2'), '-C', tree, '.']);
  execFileSync('zip', ['-q', '-r', join(root, 'a.zip'), '.'], { cwd: tree });
  return {
    tar: readFileSync(join(root, 'a.tar')),
    tgz: readFileSync(join(root, 'a.tgz')),
    tbz2: readFileSync(join(root, 'a.tbz2')),
    zip: readFileSync(join(root, 'a.zip')),
    gz: gzipSync('single\n'),
  };
}

const haveZip = (() => {
  try {
    execFileSync('sh', ['-c', 'command -v zip && command -v unzip && command -v bzip2'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

test(
  'archives served over loopback HTTP unpack into their directories, by extension and by content',
  { skip: !haveZip && 'needs zip, unzip and bzip2' },
  async (t) => {
    const root = mkdtempSync(join(tmpdir(), 'cfn-init-sources-'));
    t.after(() => rmSync(root, { recursive: true, force: true }));
    const blobs = archives(root);
    const server = createServer((request, response) => {
      const [, kind = ''] = /^\/(?:typed\/[^/]*\.|blob\/|redirect\/)?([a-z0-9]+)/.exec(request.url ?? '') ?? [];
      if (request.url?.startsWith('/redirect/')) {
        response.writeHead(302, { location: `/blob/${kind}` }).end();
        return;
      }
      const blob = blobs[kind];
      if (blob === undefined) response.writeHead(404).end();
      else response.end(blob);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const { context } = fakeContext(processRunner(), { fetchUrl });
    const sources: Record<string, string> = {
      [`${root}/out/tar`]: `${base}/typed/x.tar`,
      [`${root}/out/tgz`]: `${base}/typed/x.tgz`,
      [`${root}/out/tbz2`]: `${base}/typed/x.tbz2`,
      [`${root}/out/zip`]: `${base}/typed/x.zip`,
      [`${root}/out/sniffed-tgz`]: `${base}/blob/tgz`,
      [`${root}/out/sniffed-tbz2`]: `${base}/blob/tbz2`,
      [`${root}/out/sniffed-zip`]: `${base}/redirect/zip`,
      [`${root}/out/sniffed-tar`]: `${base}/blob/tar`,
    };
    await applySources(context, sources);
    for (const dir of Object.keys(sources)) {
      assert.equal(readFileSync(join(dir, 'top.txt'), 'utf8'), 'top\n', dir);
      assert.equal(readFileSync(join(dir, 'sub', 'deep.txt'), 'utf8'), 'deep\n', dir);
    }
    await applySources(context, { [`${root}/out/single`]: `${base}/typed/config.gz` });
    assert.equal(readFileSync(join(root, 'out', 'single', 'config'), 'utf8'), 'single\n');
    assert.equal(context.changes.sources.size, 9);
    assert.equal(sourceTypeFromContent(blobs.tgz!), 'tgz');
    assert.equal(sourceTypeFromContent(blobs.gz!), 'gz');

    await assert.rejects(
      applySources(context, { [`${root}/out/missing`]: `${base}/typed/x.nothing` }),
      (error: Error) =>
        error instanceof StepError && /sources: .*missing: could not download .*: GET .* answered HTTP 404/.test(error.message),
    );
  },
);

test('content that is no archive, and a failing tar, are StepErrors naming the directory', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'cfn-init-sources-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const plain = fakeContext(recordingRunner(), { fetchUrl: async () => Buffer.from('just text') }).context;
  await assert.rejects(
    applySources(plain, { [`${root}/a`]: 'http://127.0.0.1:1/file' }),
    /sources: .*\/a: http:\/\/127.0.0.1:1\/file is not a tar, tar.gz, tar.bz2, zip, gz or bz2 archive/,
  );
  const runner = recordingRunner(() => ({ exitCode: 2, stderr: 'tar: This does not look like a tar archive' }));
  const broken = fakeContext(runner, { fetchUrl: async () => Buffer.from('x') }).context;
  await assert.rejects(
    applySources(broken, { [`${root}/b`]: 'http://127.0.0.1:1/x.tar' }),
    (error: Error) => error instanceof StepError && error.exitCode === 2 && /does not look like a tar archive/.test(error.message),
  );
  assert.match(runner.calls[0]!.command, /^tar -x -f \S+\/archive -C .*\/b$/);
});
