import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, removeServerData, spawnServer, whenHeld } from '../helpers/server.ts';

interface Reply {
  status: number;
  headers: Headers;
  json: () => Promise<Record<string, unknown>>;
}

async function call(url: string, init: RequestInit & { headers?: Record<string, string> } = {}): Promise<Reply> {
  const response = await fetch(url, init);
  return { status: response.status, headers: response.headers, json: () => response.json() as Promise<Record<string, unknown>> };
}

test('black box: register, configure, deploy, poll as the VM, signal, see the result; a second server is denied', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-e2e-'));
  const server = await spawnServer(dataDir, await freePort());
  const admin = { 'x-auth-token': server.token, 'content-type': 'application/json' };
  try {
    const vm = await (
      await call(`${server.url}/v1/default/servers`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'web-1' }) })
    ).json();
    const other = await (
      await call(`${server.url}/v1/default/servers`, { method: 'POST', headers: admin, body: JSON.stringify({ name: 'db-1' }) })
    ).json();
    const vmId = (vm.server as { id: string }).id;
    const agent = { authorization: `Bearer ${(vm.credential as { token: string }).token}` };
    const otherAgent = { authorization: `Bearer ${(other.credential as { token: string }).token}` };

    const config = await (
      await call(`${server.url}/v1/default/software_configs`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({
          name: 'install',
          group: 'script',
          config: '#!/bin/sh\necho ok',
          inputs: [{ name: 'pkg' }],
          outputs: [{ name: 'version' }],
        }),
      })
    ).json();
    const configId = (config.software_config as { id: string }).id;

    const empty = await call(`${server.url}/v1/guest/metadata`, { headers: agent });
    assert.equal(empty.status, 200);
    const etag = empty.headers.get('etag')!;
    assert.equal((await call(`${server.url}/v1/guest/metadata`, { headers: { ...agent, 'if-none-match': etag } })).status, 304);

    // The VM long-polls (held by the server, not still on its way); a deployment created meanwhile wakes it.
    const { request: poll } = await whenHeld(server.url, () =>
      call(`${server.url}/v1/guest/metadata?wait=20`, { headers: { ...agent, 'if-none-match': etag } }),
    );
    const created = await (
      await call(`${server.url}/v1/default/software_deployments`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ config_id: configId, server_id: vmId, input_values: { pkg: 'nginx' } }),
      })
    ).json();
    // From the commit's acknowledgement: a poll the commit did not wake would answer when its 20 s end.
    const createdAt = Date.now();
    const deploymentId = (created.software_deployment as { id: string }).id;
    const woken = await poll;
    const latency = Date.now() - createdAt;
    assert.equal(woken.status, 200);
    assert.ok(latency < 1000, `the change reached the VM ${latency} ms after its commit`);
    const document = await woken.json();
    const [entry] = document.deployments as Array<{ inputs: Array<{ name: string; value: unknown }> }>;
    assert.equal(entry!.inputs.find((i) => i.name === 'pkg')!.value, 'nginx');

    // Another server's credential is denied everything of this one.
    const denied = await call(`${server.url}/v1/guest/deployments/${deploymentId}/signal`, {
      method: 'POST',
      headers: { ...otherAgent, 'content-type': 'application/json' },
      body: '{}',
    });
    assert.equal(denied.status, 404);
    const otherDoc = await (await call(`${server.url}/v1/guest/metadata`, { headers: otherAgent })).json();
    assert.deepEqual(otherDoc.deployments, []);

    const signal = await call(`${server.url}/v1/guest/deployments/${deploymentId}/signal`, {
      method: 'POST',
      headers: { ...agent, 'content-type': 'application/json' },
      body: JSON.stringify({ deploy_stdout: 'installed', deploy_stderr: '', deploy_status_code: 0, version: '1.24' }),
    });
    assert.equal(signal.status, 200);
    const done = (await (await call(`${server.url}/v1/default/software_deployments/${deploymentId}`, { headers: admin })).json())
      .software_deployment as Record<string, unknown>;
    assert.equal(done.status, 'COMPLETE');
    assert.deepEqual(done.output_values, { version: '1.24', deploy_stdout: 'installed', deploy_stderr: '', deploy_status_code: 0 });

    const failing = await (
      await call(`${server.url}/v1/default/software_deployments`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ config_id: configId, server_id: vmId }),
      })
    ).json();
    const failingId = (failing.software_deployment as { id: string }).id;
    await call(`${server.url}/v1/guest/deployments/${failingId}/signal`, {
      method: 'POST',
      headers: { ...agent, 'content-type': 'application/json' },
      body: JSON.stringify({ deploy_status_code: 1, deploy_stderr: 'E: no such package' }),
    });
    const failed = (await (await call(`${server.url}/v1/default/software_deployments/${failingId}`, { headers: admin })).json())
      .software_deployment as Record<string, unknown>;
    assert.equal(failed.status, 'FAILED');
    assert.match(String(failed.status_reason), /non-zero status code: 1/);
  } finally {
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0, 'SIGTERM stops hearth-server cleanly');
    await removeServerData(dataDir);
  }
});
