import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'node:http';
import { freePort, postJson, removeServerData, spawnServer, whenHeld } from '../helpers/server.ts';

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

test('SIGTERM answers long-polls and ends event streams instead of cutting them', { timeout: 120_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-term-'));
  const server = await spawnServer(dataDir, await freePort());
  const admin = { 'x-auth-token': server.token, 'content-type': 'application/json' };
  try {
    const vm = await json<{ server: { id: string }; credential: { token: string } }>(
      fetch(`${server.url}/v1/default/servers`, { method: 'POST', headers: admin, body: '{"name":"vm"}' }),
    );
    const agent = { authorization: `Bearer ${vm.credential.token}` };
    const config = await json<{ software_config: { id: string } }>(
      fetch(`${server.url}/v1/default/software_configs`, { method: 'POST', headers: admin, body: '{"group":"script"}' }),
    );
    const deployment = await json<{ software_deployment: { id: string } }>(
      fetch(`${server.url}/v1/default/software_deployments`, {
        method: 'POST',
        headers: admin,
        body: JSON.stringify({ config_id: config.software_config.id, server_id: vm.server.id }),
      }),
    );
    const etag = (await fetch(`${server.url}/v1/guest/metadata`, { headers: agent })).headers.get('etag')!;
    // Each settles with what the client saw: a status and a whole body, or the error of a cut connection.
    const outcome = async (response: Promise<Response>) => {
      try {
        const reply = await response;
        return { status: reply.status, body: await reply.text() };
      } catch (error) {
        return { error: String((error as Error).cause ?? error) };
      }
    };
    // One at a time, each held by the server (waiting on its feed) before the next.
    const { request: poll } = await whenHeld(server.url, () =>
      outcome(fetch(`${server.url}/v1/guest/metadata?wait=60`, { headers: { ...agent, 'if-none-match': etag } })),
    );
    const { request: waited } = await whenHeld(server.url, () =>
      outcome(fetch(`${server.url}/v1/default/software_deployments/${deployment.software_deployment.id}?wait=60`, { headers: admin })),
    );
    const { request: stream } = await whenHeld(server.url, () =>
      outcome(fetch(`${server.url}/v1/default/events/stream`, { headers: admin })),
    );

    const stoppedAt = Date.now();
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 0);
    const took = Date.now() - stoppedAt;
    assert.deepEqual(await poll, { status: 304, body: '' }, 'the long-poll is answered: nothing changed');
    const deploymentReply = await waited;
    assert.equal(deploymentReply.status, 200, JSON.stringify(deploymentReply));
    assert.equal(JSON.parse(deploymentReply.body).software_deployment.status, 'IN_PROGRESS');
    const streamReply = await stream;
    assert.equal(streamReply.status, 200, JSON.stringify(streamReply));
    assert.match(streamReply.body, /^: hearth events\n\n[^]*event: deployment\.created\n/, 'the stream ended cleanly after its events');
    assert.ok(took < 5_000, `stopped within 5 s (took ${took} ms)`);
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
    await removeServerData(dataDir);
  }
});

test('a second SIGTERM stops hearth-server at once, without the drain, with exit 143', { timeout: 120_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-term-'));
  const server = await spawnServer(dataDir, await freePort());
  try {
    // A write whose body never finishes arriving holds the drain (up to 10 s).
    const upload = request(`${server.url}/v1/default/servers`, {
      method: 'POST',
      headers: { 'x-auth-token': server.token, 'content-type': 'application/json', 'content-length': '100' },
    });
    upload.on('error', () => undefined);
    upload.write('{"name":');
    await new Promise((resolve) => setTimeout(resolve, 300));

    server.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(server.child.exitCode, null, 'the first SIGTERM waits for the write in flight');
    const againAt = Date.now();
    server.child.kill('SIGTERM');
    assert.equal(await server.exited, 143);
    assert.ok(Date.now() - againAt < 3_000, 'the second SIGTERM stops it at once');
    upload.destroy();
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
    await removeServerData(dataDir);
  }
});
