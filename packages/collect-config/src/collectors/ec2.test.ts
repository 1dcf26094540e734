import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { contextFor, fakeServer, optionsFor } from '../test-support/fixtures.ts';
import { findConfigDrive, mountPointOf } from './config-drive.ts';
import { createEc2Collector } from './ec2.ts';

const TREE: Record<string, string> = {
  '/latest/meta-data/': 'instance-id\npublic-keys/\nplacement/\n',
  '/latest/meta-data/instance-id': 'i-1',
  '/latest/meta-data/public-keys/': '0=mykey\n',
  '/latest/meta-data/public-keys/0/': 'openssh-key',
  '/latest/meta-data/public-keys/0/openssh-key': 'ssh-rsa AAA',
  '/latest/meta-data/placement/': 'availability-zone',
  '/latest/meta-data/placement/availability-zone': 'nova',
};

test('ec2: crawls the loopback tree (a=b fetches a/, x/ recurses); a cached ec2.json wins; errors are unavailable', async () => {
  const server = await fakeServer((request, response) => {
    const body = TREE[request.url];
    response.writeHead(body === undefined ? 404 : 200, { 'content-type': 'text/plain' });
    response.end(body ?? 'not found');
  });
  try {
    const options = optionsFor(['--ec2-metadata-url', `${server.url}/latest/meta-data`]);
    const collector = createEc2Collector(() => undefined);
    assert.deepEqual(await collector.collect(contextFor(options)), {
      kind: 'data',
      outputs: [
        [
          'ec2',
          { 'instance-id': 'i-1', 'public-keys': { '0': { 'openssh-key': 'ssh-rsa AAA' } }, placement: { 'availability-zone': 'nova' } },
        ],
      ],
    });
    mkdirSync(options.cachedir, { recursive: true });
    writeFileSync(join(options.cachedir, 'ec2.json'), '{"instance-id": "cached"}');
    const requests = server.requests.length;
    assert.deepEqual(await collector.collect(contextFor(options)), { kind: 'data', outputs: [['ec2', { 'instance-id': 'cached' }]] });
    assert.equal(server.requests.length, requests, 'fetched once, never refreshed');
    const broken = optionsFor(['--ec2-metadata-url', `${server.url}/nothing`]);
    assert.equal((await collector.collect(contextFor(broken))).kind, 'unavailable');
    const drive = createEc2Collector(() => ({ 'instance-id': 'from-drive' }));
    assert.deepEqual(await drive.collect(contextFor(broken)), { kind: 'data', outputs: [['ec2', { 'instance-id': 'from-drive' }]] });
  } finally {
    await server.close();
  }
});

test('ec2: a URL that answers every path with the same page is given up after a few levels, not crawled until the URL is too long', async () => {
  const page = '<!doctype html>\n<html lang="en">\n<meta charset="utf-8">\n</html>\n';
  const server = await fakeServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(page);
  });
  try {
    const outcome = await createEc2Collector(() => undefined).collect(contextFor(optionsFor(['--ec2-metadata-url', `${server.url}/`])));
    assert.equal(outcome.kind, 'unavailable');
    assert.match((outcome as { reason: string }).reason, /deeper than 16 levels: is \[ec2\] metadata_url an EC2-style metadata service\?/);
    assert.ok(server.requests.length <= 2 * 17, `${server.requests.length} requests (a leaf and a directory per level)`);
  } finally {
    await server.close();
  }
});

test('config drive: the config-2 device from blkid -o export, and its mount point', () => {
  const blkid = 'DEVNAME=/dev/vda1\nLABEL=cloudimg-rootfs\nTYPE=ext4\n\nDEVNAME=/dev/sr0\nLABEL=config-2\nTYPE=iso9660\n';
  assert.equal(findConfigDrive(blkid), '/dev/sr0');
  assert.equal(findConfigDrive('DEVNAME=/dev/vdb\nLABEL=config-2\nTYPE=ext4\n'), undefined, 'only vfat or iso9660');
  assert.equal(mountPointOf('/dev/vda1 / ext4 rw 0 0\n/dev/sr0 /mnt/config\\040drive iso9660 ro 0 0\n', '/dev/sr0'), '/mnt/config drive');
  assert.equal(mountPointOf('/dev/vda1 / ext4 rw 0 0\n', '/dev/sr0'), undefined);
});
