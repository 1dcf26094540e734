// Deadlines that pass while hearth-server is not running: after a restart they are held for the
// restart grace, so a result an agent queued during the outage still completes its deployment.
// Once the grace is over, the silent ones fail with a reason that says the server was down.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.ts';
import { ADMIN, createConfig, createDeployment, registerServer, testStore } from '../test-support.ts';

const GRACE_MS = 2500;

/** hearth-server on the test's store, with this restart grace. */
function openApp(store: { dataDir: string; databaseUrl?: string }, restartGraceMs: number): Promise<FastifyInstance> {
  return buildApp({
    dataDir: store.dataDir,
    databaseUrl: store.databaseUrl,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
    restartGraceMs,
  });
}

/** A deployment's status and reason, as the operator reads them. */
async function deploymentOf(app: FastifyInstance, id: string): Promise<{ status: string; status_reason: string }> {
  const reply = await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
  return reply.json<{ software_deployment: { status: string; status_reason: string } }>().software_deployment;
}

test('a deadline passed during an outage waits the restart grace: a late signal completes it, silence fails it saying so', async () => {
  const store = await testStore();
  const open = (restartGraceMs: number) => openApp(store, restartGraceMs);
  try {
    const before = await open(0);
    const server = await registerServer(before, 'vm');
    const configId = await createConfig(before);
    const late = await createDeployment(before, configId, server.id, { timeout: 1 });
    const silent = await createDeployment(before, configId, server.id, { timeout: 1 });
    assert.equal((await before.inject({ url: '/v1/guest/metadata', headers: server.auth })).statusCode, 200);
    await before.close();
    await sleep(1500); // both deadlines pass while no hearth-server runs

    const after = await open(GRACE_MS);
    try {
      const show = (id: string) => deploymentOf(after, id);
      await sleep(300);
      assert.equal((await show(late)).status, 'IN_PROGRESS', 'held during the restart grace');
      assert.equal((await show(silent)).status, 'IN_PROGRESS', 'held during the restart grace');
      const signal = await after.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${late}/signal`,
        headers: server.auth,
        payload: { deploy_status_code: 0, deploy_stdout: 'done while hearth-server was down' },
      });
      assert.equal(signal.statusCode, 200, signal.body);
      assert.equal((await show(late)).status, 'COMPLETE');

      let shown = await show(silent);
      for (let i = 0; i < 60 && shown.status === 'IN_PROGRESS'; i++) {
        await sleep(100);
        shown = await show(silent);
      }
      assert.equal(shown.status, 'FAILED', 'failed once the grace is over');
      assert.match(
        shown.status_reason,
        /^Timed out after 1 s: .*\(hearth-server was not running when the deadline passed; it waited 3 s after starting for a late result\)$/,
      );
      assert.equal((await show(late)).status, 'COMPLETE', 'the completed one stays so');
      const timedOut = await after.inject({ url: `/v1/default/events?resource_id=${silent}`, headers: ADMIN });
      const event = timedOut
        .json<{ events: Array<{ type: string; data: unknown }> }>()
        .events.find((e) => e.type === 'deployment.timed_out');
      assert.deepEqual(event?.data, { timeout: 1, cause: 'never_signalled', server_was_down: true });
    } finally {
      await after.close();
    }
  } finally {
    await store.remove();
  }
});

test('a deadline that passes just after a restart, on a deployment not heard from since, also waits the grace; one heard from does not', async () => {
  const store = await testStore();
  const open = (restartGraceMs: number) => openApp(store, restartGraceMs);
  try {
    const before = await open(0);
    const server = await registerServer(before, 'vm');
    const configId = await createConfig(before);
    // Deadlines 2 s away: they pass after the restart below, inside its grace.
    const late = await createDeployment(before, configId, server.id, { timeout: 2 });
    const silent = await createDeployment(before, configId, server.id, { timeout: 2 });
    const beating = await createDeployment(before, configId, server.id, { timeout: 2 });
    assert.equal((await before.inject({ url: '/v1/guest/metadata', headers: server.auth })).statusCode, 200);
    await before.close();

    const after = await open(GRACE_MS + 4500);
    const opened = Date.now();
    try {
      const show = (id: string) => deploymentOf(after, id);
      // Heard from after the start: its deadline (now 2 s from this heartbeat) is enforced as usual.
      const beat = await after.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${beating}/heartbeat`,
        headers: server.auth,
        payload: { message: 'still here' },
      });
      assert.equal(beat.statusCode, 200, beat.body);
      let beaten = await show(beating);
      for (let i = 0; i < 60 && beaten.status === 'IN_PROGRESS'; i++) {
        await sleep(100);
        beaten = await show(beating);
      }
      // The others' deadlines, set before the one the heartbeat moved, have passed too, after the start.
      assert.equal(beaten.status, 'FAILED', 'heard from since the start: not held');
      assert.ok(Date.now() - opened < GRACE_MS + 4500, 'still inside the grace');
      assert.equal((await show(late)).status, 'IN_PROGRESS', 'not heard from since the start: held');
      assert.equal((await show(silent)).status, 'IN_PROGRESS', 'not heard from since the start: held');
      const signal = await after.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${late}/signal`,
        headers: server.auth,
        payload: { deploy_status_code: 0, deploy_stdout: 'retried after the restart' },
      });
      assert.equal(signal.statusCode, 200, signal.body);
      assert.equal((await show(late)).status, 'COMPLETE');

      let shown = await show(silent);
      for (let i = 0; i < 150 && shown.status === 'IN_PROGRESS'; i++) {
        await sleep(100);
        shown = await show(silent);
      }
      assert.equal(shown.status, 'FAILED', 'failed once the grace is over');
      assert.match(
        shown.status_reason,
        /^Timed out after 2 s: .*\(hearth-server restarted while it ran; it waited 7 s after starting for a late result\)$/,
      );
    } finally {
      await after.close();
    }
  } finally {
    await store.remove();
  }
});
