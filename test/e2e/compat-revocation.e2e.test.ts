// Debian's own clients holding what hearth-server handed a VM, after the operator deleted what it was
// for: os-collect-config's heat, cfn and request collectors (a keystone password, EC2 keys, a Swift
// temp URL) once the server is deleted, a keystone token taken before the delete, and cfn-signal with
// a wait condition's handle URL once the condition is deleted (and again once one of the same name
// replaces it). Every client talks to 127.0.0.1 only, in the conformance harness's sandbox.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type TestServer } from '../helpers/server.ts';
import { operatorApi, runClient, skipUnlessClients, type CreatedServer } from '../conformance/clients.ts';

const skip = skipUnlessClients();

type Collector = 'cfn' | 'heat' | 'request';

const TRANSPORTS: Record<Collector, string> = { cfn: 'POLL_SERVER_CFN', heat: 'POLL_SERVER_HEAT', request: 'POLL_TEMP_URL' };

/** One os-collect-config pass with only `collector`, from the server's generated conf; the printed JSON and stderr. */
async function collect(collector: Collector, created: CreatedServer): Promise<{ printed: Record<string, unknown>; stderr: string }> {
  const conf = '@SCRATCH@/os-collect-config.conf';
  const run = await runClient(
    [
      'os-collect-config',
      '--print',
      '--cachedir',
      '@SCRATCH@/cache',
      '--backup-cachedir',
      '@SCRATCH@/backup',
      '--config-file',
      conf,
      collector,
    ],
    { files: { [conf]: created.os_collect_config_conf } },
  );
  assert.equal(run.exitCode, 0, `os-collect-config ${collector} failed:\n${run.stderr}`);
  return { printed: JSON.parse(run.stdout) as Record<string, unknown>, stderr: run.stderr };
}

async function deleteServer(server: TestServer, id: string): Promise<void> {
  const reply = await fetch(`${server.url}/v1/default/servers/${id}`, { method: 'DELETE', headers: { 'x-auth-token': server.token } });
  assert.equal(reply.status, 204, await reply.text());
}

for (const collector of ['heat', 'cfn', 'request'] as const) {
  test(`os-collect-config ${collector} collector: the deleted server's credential fetches nothing`, { skip }, async () => {
    const server = await startServer();
    try {
      const api = operatorApi(server);
      const created = await api.createServer({ name: 'vm1', software_config_transport: TRANSPORTS[collector] });
      const deploymentId = await api.deployScript(created.server.id, '#!/bin/sh\necho only-for-vm1');
      const before = await collect(collector, created);
      assert.match(JSON.stringify(before.printed), new RegExp(deploymentId), `${collector} collects the deployment before the delete`);

      // A keystone token taken before the delete, as a running heat collector's session holds one.
      const heat = created.os_collect_config.heat;
      const login =
        heat &&
        (await fetch(`${heat.auth_url}/auth/tokens`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            auth: { identity: { methods: ['password'], password: { user: { id: heat.user_id, password: heat.password } } } },
          }),
        }));
      const token = login?.headers.get('x-subject-token');

      await deleteServer(server, created.server.id);
      const after = await collect(collector, created);
      assert.deepEqual(after.printed, {}, `${collector}: nothing collected after the delete`);
      assert.match(after.stderr, new RegExp(`Source \\[${collector}\\] Unavailable`));
      assert.doesNotMatch(after.stderr, /only-for-vm1/);

      if (heat && token) {
        const metadata = await fetch(
          `${server.url}/v1/${heat.project_id}/stacks/${heat.stack_id}/resources/${heat.resource_name}/metadata`,
          {
            headers: { 'x-auth-token': token },
          },
        );
        const body = await metadata.text();
        assert.equal(metadata.status, 401, body);
        assert.equal((JSON.parse(body) as { error: { code: string } }).error.code, 'ERR_AUTH_INVALID');
      }
    } finally {
      await server.close();
    }
  });
}

test(
  "cfn-signal -i with a deleted wait condition's handle URL: refused, and a condition of the same name gets nothing",
  { skip },
  async () => {
    const server = await startServer();
    try {
      const api = operatorApi(server);
      await api.createStack('web');
      const url = (await api.createWaitCondition('web', { name: 'ready', count: 2, timeout: 600 })).handle.cfn_url;
      assert.equal((await runClient(['cfn-signal', '-i', 'vm1', '-r', 'ok', '-d', 'first', url])).exitCode, 0);
      assert.equal((await api.waitCondition('web', 'ready')).received, 1);

      const deleted = await fetch(`${server.url}/v1/default/stacks/web/wait_conditions/ready`, {
        method: 'DELETE',
        headers: { 'x-auth-token': server.token },
      });
      assert.equal(deleted.status, 204);
      const replacement = await api.createWaitCondition('web', { name: 'ready', count: 2, timeout: 600 });
      assert.notEqual(replacement.handle.cfn_url, url);

      // cfn-signal exits 0 whatever the status: the server's state and the wire answer say what happened.
      const run = await runClient(['cfn-signal', '-i', 'vm2', '-r', 'ok', '-d', 'late', url]);
      assert.equal(run.exitCode, 0, run.stderr);
      const now = await api.waitCondition('web', 'ready');
      assert.equal(now.received, 0, `the replacement got nothing: ${JSON.stringify(now.signals)}`);
      const wire = await fetch(url, {
        method: 'PUT',
        body: JSON.stringify({ Status: 'SUCCESS', Reason: 'ok', UniqueId: 'vm3', Data: 'late' }),
      });
      const body = await wire.text();
      assert.equal(wire.status, 403, body);
      assert.match(body, /<Code>InvalidClientTokenId<\/Code>/);
    } finally {
      await server.close();
    }
  },
);
