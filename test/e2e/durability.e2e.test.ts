import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'node:http';
import { freePort, postJson, removeServerData, spawnServer } from '../helpers/server.ts';

const keepAlive = new Agent({ keepAlive: true, maxSockets: 32 });

test('SIGKILL under signal load loses no acknowledged signal', { timeout: 180_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-kill-'));
  const port = await freePort();
  let server = await spawnServer(dataDir, port);
  const admin = { 'x-auth-token': server.token };
  try {
    const vm = JSON.parse(
      await (
        await fetch(`${server.url}/v1/default/servers`, {
          method: 'POST',
          headers: { ...admin, 'content-type': 'application/json' },
          body: '{"name":"vm"}',
        })
      ).text(),
    );
    const agent = { authorization: `Bearer ${vm.credential.token as string}` };
    const config = (await (
      await fetch(`${server.url}/v1/default/software_configs`, {
        method: 'POST',
        headers: { ...admin, 'content-type': 'application/json' },
        body: '{"group":"script"}',
      })
    ).json()) as { software_config: { id: string } };
    const ids: string[] = [];
    for (let i = 0; i < 600; i++) {
      const created = (await (
        await fetch(`${server.url}/v1/default/software_deployments`, {
          method: 'POST',
          headers: { ...admin, 'content-type': 'application/json' },
          body: JSON.stringify({ config_id: config.software_config.id, server_id: vm.server.id }),
        })
      ).json()) as { software_deployment: { id: string } };
      ids.push(created.software_deployment.id);
    }
    // 32 concurrent senders signal deployments until the server is killed mid-flight.
    const acknowledged: string[] = [];
    let next = 0;
    let killed = false;
    const sender = async () => {
      while (!killed && next < ids.length) {
        const id = ids[next++]!;
        const status = await postJson(keepAlive, `${server.url}/v1/guest/deployments/${id}/signal`, agent, {
          deploy_status_code: 0,
          deploy_stdout: `done ${id}`,
        });
        if (status === 200) acknowledged.push(id);
      }
    };
    const senders = Array.from({ length: 32 }, sender);
    while (acknowledged.length < 200) await new Promise((r) => setTimeout(r, 5));
    server.child.kill('SIGKILL');
    killed = true;
    await server.exited;
    await Promise.all(senders);
    keepAlive.destroy();
    assert.ok(acknowledged.length >= 200 && acknowledged.length < ids.length, `killed mid-load after ${acknowledged.length} acks`);

    server = await spawnServer(dataDir, port);
    const listed = (await (
      await fetch(`${server.url}/v1/default/software_deployments?server_id=${vm.server.id as string}`, { headers: admin })
    ).json()) as { software_deployments: Array<{ id: string; status: string }> };
    const status = new Map<string, string>(listed.software_deployments.map((d: { id: string; status: string }) => [d.id, d.status]));
    const lost = acknowledged.filter((id) => status.get(id) !== 'COMPLETE');
    assert.deepEqual(lost, [], `${lost.length} of ${acknowledged.length} acknowledged signals were lost`);
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
    await removeServerData(dataDir);
  }
});
