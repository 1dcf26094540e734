// Debian's cfn-get-metadata (heat-cfntools, boto 2) against hearth-server's DescribeStackResource.
// boto takes the host from cfn-boto-cfg and the port from cfn-metadata-server (reference/observed-clients.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type TestServer } from '../helpers/server.ts';
import { assertOnlyDeployment, guestMetadata, operatorApi, runClient, SCRIPT, skipUnlessClients, type CreatedServer } from './clients.ts';

const skip = skipUnlessClients();

function cfnToolsFiles(server: TestServer): Record<string, string> {
  return {
    '/var/lib/heat-cfntools/cfn-boto-cfg':
      '[Boto]\ndebug = 0\nis_secure = 0\nhttps_validate_certificates = 1\ncfn_region_name = heat\ncfn_region_endpoint = 127.0.0.1\n',
    '/var/lib/heat-cfntools/cfn-metadata-server': server.url,
  };
}

function getMetadata(server: TestServer, keys: CreatedServer['credential'], stack: string, resource: string) {
  return runClient(
    ['cfn-get-metadata', '--access-key', keys.access_key_id, '--secret-key', keys.secret_access_key, '-s', stack, '-r', resource],
    { files: cfnToolsFiles(server) },
  );
}

test('cfn-get-metadata: a POLL_SERVER_CFN server reads its own metadata; another server’s keys read nothing', { skip }, async () => {
  const server = await startServer();
  try {
    const api = operatorApi(server);
    await api.createStack('web');
    const vm1 = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
    const vm2 = await api.createServer({ name: 'vm2', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
    const deploymentId = await api.deployScript(vm1.server.id);
    const resource = vm1.server.resource_name;
    assert.equal(vm1.server.stack_name, 'web');
    assert.equal(vm1.os_collect_config.cfn?.access_key_id, vm1.credential.access_key_id);

    const own = await getMetadata(server, vm1.credential, 'web', resource);
    assert.equal(own.exitCode, 0, own.stderr);
    const metadata = JSON.parse(own.stdout) as Record<string, unknown>;
    assertOnlyDeployment(metadata, deploymentId, SCRIPT);
    assert.deepEqual(metadata, await guestMetadata(server, vm1), 'the same document the agent API serves');
    assert.ok(own.written[`/var/cache/heat-cfntools/last_metadata_${resource}`], 'boto parsed it: the metadata cache was written');

    const stolen = await getMetadata(server, vm2.credential, 'web', resource);
    assert.notEqual(stolen.exitCode, 0, 'vm2 keys must not read vm1 metadata');
    assert.doesNotMatch(stolen.stdout, new RegExp(deploymentId));
    assert.match(stolen.stderr, /BotoServerError: 40[13]/, 'refused by the server (not a connection failure)');

    const forged = await getMetadata(
      server,
      { ...vm1.credential, secret_access_key: `${vm1.credential.secret_access_key}x` },
      'web',
      resource,
    );
    assert.notEqual(forged.exitCode, 0, 'a wrong secret key must be refused');
    assert.doesNotMatch(forged.stdout, new RegExp(deploymentId));
    assert.match(forged.stderr, /BotoServerError: 40[13]/, 'refused by the server (not a connection failure)');
  } finally {
    await server.close();
  }
});
