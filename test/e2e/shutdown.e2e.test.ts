import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'node:http';
import { freePort, postJson, removeServerData, spawnServer } from '../helpers/server.ts';

async function json<T>(response: Promise<Response>): Promise<T> {
  return (await (await response).json()) as T;
}

test('SIGTERM under signal load answers every signal it commits, then exits 0', { timeout: 180_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-term-'));
  const port = await freePort();
  let server = await spawnServer(dataDir, port);
  const admin = { 'x-auth-token': server.token, 'content-type': 'application/json' };
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 32 });
  try {
    const vm = await json<{ server: { id: string }; credential: { token: string } }>(
      fetch(`${server.url}/v1/default/servers`, { method: 'POST', headers: admin, body: '{"name":"vm"}' }),
    );
    const config = await json<{ software_config: { id: string } }>(
      fetch(`${server.url}/v1/default/software_configs`, { method: 'POST', headers: admin, body: '{"group":"script"}' }),
    );
    const ids: string[] = [];
    for (let i = 0; i < 400; i++) {
      const created = await json<{ software_deployment: { id: string } }>(
        fetch(`${server.url}/v1/default/software_deployments`, {
          method: 'POST',
          headers: admin,
          body: JSON.stringify({ config_id: config.software_config.id, server_id: vm.server.id }),
        }),
      );
      ids.push(created.software_deployment.id);
    }
    // 32 concurrent senders keep signals in flight until the server has stopped.
    const answered = new Map<string, number>();
    let next = 0;
    let acknowledged = 0;
    let stopped = false;
    const sender = async () => {
      while (!stopped && next < ids.length) {
        const id = ids[next++]!;
        const status = await postJson(
          keepAlive,
          `${server.url}/v1/guest/deployments/${id}/signal`,
          {
            authorization: `Bearer ${vm.credential.token}`,
          },
          { deploy_status_code: 0, deploy_stdout: 'done' },
        );
        answered.set(id, status);
        if (status === 200) acknowledged++;
      }
    };
    const senders = Array.from({ length: 32 }, sender);
    while (acknowledged < 100) await new Promise((r) => setTimeout(r, 2));
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    const code = await server.exited;
    const took = Date.now() - signalledAt;
    stopped = true;
    await Promise.all(senders);
    assert.equal(code, 0, 'hearth-server exits 0 on SIGTERM');
    assert.ok(took < 10_000, `hearth-server stopped within 10 s of SIGTERM (took ${took} ms)`);
    assert.ok(acknowledged < ids.length, 'signals were still in flight at SIGTERM');

    server = await spawnServer(dataDir, port);
    const listed = await json<{ software_deployments: Array<{ id: string; status: string }> }>(
      fetch(`${server.url}/v1/default/software_deployments?server_id=${vm.server.id}`, { headers: admin }),
    );
    const status = new Map(listed.software_deployments.map((d) => [d.id, d.status]));
    const lost = [...answered].filter(([id, reply]) => reply === 200 && status.get(id) !== 'COMPLETE');
    assert.deepEqual(lost, [], 'no acknowledged signal is lost');
    const unanswered = [...answered].filter(([id, reply]) => reply !== 200 && status.get(id) === 'COMPLETE');
    assert.deepEqual(unanswered, [], 'every signal committed was answered 200, not cut off by the shutdown');
  } finally {
    keepAlive.destroy();
    server.child.kill('SIGKILL');
    await server.exited;
    await removeServerData(dataDir);
  }
});
