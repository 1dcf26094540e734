// Side by side: hearth's cfn-get-metadata (packages/cfn-tools) and Debian's (heat-cfntools 1.4.2, boto 2)
// read the same hearth-server resource with the same files and flags: same stdout, same cache content.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runBin } from '../../packages/cfn-tools/src/shared/run-bin.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { guestMetadata, operatorApi, runClient, skipUnlessClients } from './clients.ts';

const skip = skipUnlessClients();

function cfnToolsFiles(server: TestServer): Record<string, string> {
  return {
    '/var/lib/heat-cfntools/cfn-boto-cfg':
      '[Boto]\ndebug = 0\nis_secure = 0\nhttps_validate_certificates = 1\ncfn_region_name = heat\ncfn_region_endpoint = 127.0.0.1\n',
    '/var/lib/heat-cfntools/cfn-metadata-server': server.url,
  };
}

/** A temp root holding the same files, for ours (HEARTH_ROOT). */
function ourRoot(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'cfn-tools-conformance-'));
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

test('cfn-get-metadata: ours prints byte for byte what Debian’s prints for a hearth server, whole and with -k', { skip }, async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  await api.createStack('web');
  const vm = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
  await api.deployScript(vm.server.id, '#!/bin/sh\necho "héllo"');
  const resource = vm.server.resource_name;
  const files = cfnToolsFiles(server);
  const root = ourRoot(files);
  const keys = ['--access-key', vm.credential.access_key_id, '--secret-key', vm.credential.secret_access_key];
  const argv = ['-s', 'web', '-r', resource, ...keys];

  const theirs = await runClient(['cfn-get-metadata', ...argv], { files });
  const ours = await runBin('cfn-get-metadata', argv, { env: { HEARTH_ROOT: root } });
  assert.equal(theirs.exitCode, 0, theirs.stderr);
  assert.equal(ours.code, 0, ours.stderr);
  assert.ok(ours.stdout.length > 20);
  assert.equal(ours.stdout, theirs.stdout);
  assert.deepEqual(JSON.parse(ours.stdout), await guestMetadata(server, vm), 'the document hearth serves the server');

  const theirCache = theirs.written[`/var/cache/heat-cfntools/last_metadata_${resource}`];
  assert.ok(theirCache !== undefined, 'Debian wrote its cache');
  assert.equal(readFileSync(join(root, `var/cache/heat-cfntools/last_metadata_${resource}`), 'utf8'), theirCache);
  assert.equal(
    readFileSync(join(root, 'var/cache/heat-cfntools/last_metadata'), 'utf8'),
    theirs.written['/var/cache/heat-cfntools/last_metadata'],
  );

  for (const key of ['os-collect-config', 'deployments', 'no.such.key']) {
    const theirKey = await runClient(['cfn-get-metadata', ...argv, '-k', key], { files });
    const ourKey = await runBin('cfn-get-metadata', [...argv, '-k', key], { env: { HEARTH_ROOT: root } });
    assert.equal(ourKey.code, theirKey.exitCode, `-k ${key}: ${ourKey.stderr}`);
    assert.equal(ourKey.stdout, theirKey.stdout, `-k ${key}`);
  }
});

test('cfn-get-metadata: a wrong secret fails for both (ours says why); ours also takes --url', { skip }, async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  await api.createStack('web');
  const vm = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
  const resource = vm.server.resource_name;
  const files = cfnToolsFiles(server);
  const wrong = ['-s', 'web', '-r', resource, '--access-key', vm.credential.access_key_id, '--secret-key', 'wrong'];

  const theirs = await runClient(['cfn-get-metadata', ...wrong], { files });
  const ours = await runBin('cfn-get-metadata', wrong, { env: { HEARTH_ROOT: ourRoot(files) } });
  assert.notEqual(theirs.exitCode, 0);
  assert.equal(ours.code, 1);
  assert.equal(ours.stdout, '');
  assert.match(ours.stderr, /answered 403/);

  const viaUrl = await runBin(
    'cfn-get-metadata',
    [
      '-s',
      'web',
      '-r',
      resource,
      '--access-key',
      vm.credential.access_key_id,
      '--secret-key',
      vm.credential.secret_access_key,
      '-u',
      `${server.url}/v1/`,
    ],
    { env: { HEARTH_ROOT: ourRoot({}) } },
  );
  assert.equal(viaUrl.code, 0, viaUrl.stderr);
  assert.deepEqual(JSON.parse(viaUrl.stdout), await guestMetadata(server, vm));
});
