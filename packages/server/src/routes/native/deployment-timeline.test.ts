import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';
import { deploymentEvent } from '../../domain/deployment-rows.ts';
import { TIMELINE_REPEATED_LIMIT } from '../../domain/events.ts';

interface Entry {
  time: string;
  type: string;
  message: string;
  data: Record<string, unknown>;
}

test('a deployment that heartbeated thousands of times still shows how it ended, and says what it left out', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id, { timeout: 3600 });
    const heartbeat = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/heartbeat`,
      headers: server.auth,
      payload: { progress: 1 },
    });
    assert.equal(heartbeat.statusCode, 200);
    // Ten thousand more heartbeats (days of an agent's heartbeating), written as the heartbeat route writes them.
    const row = { id, project_id: 'default', server_id: server.id };
    for (let start = 0; start < 10_000; start += 500) {
      await app.services.store.write(async ({ event }) => {
        for (let i = start; i < start + 500; i++)
          event(deploymentEvent(row, 'deployment.heartbeat', `Heartbeat (${i % 100}%)`, { progress: i % 100 }));
      });
    }
    const signal = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/signal`,
      headers: server.auth,
      payload: { deploy_status_code: 0 },
    });
    assert.equal(signal.statusCode, 200);

    const reply = await app.inject({ url: `/v1/default/software_deployments/${id}/timeline`, headers: ADMIN });
    assert.equal(reply.statusCode, 200);
    const timeline = reply.json<{ timeline: Entry[] }>().timeline;
    assert.equal(timeline[0]!.type, 'deployment.created');
    assert.equal(timeline.at(-1)!.type, 'deployment.completed', 'the timeline must end with how the deployment ended');
    const heartbeats = timeline.filter((e) => e.type === 'deployment.heartbeat');
    assert.equal(heartbeats.length, TIMELINE_REPEATED_LIMIT);
    const omitted = timeline.filter((e) => e.type === 'timeline.omitted');
    assert.equal(omitted.length, 1);
    assert.equal(omitted[0]!.data.count, 10_001 - TIMELINE_REPEATED_LIMIT);
    assert.match(omitted[0]!.message, new RegExp(`GET /v1/default/events\\?resource_id=${id}&type=deployment\\.heartbeat`));
    // In place: after the fetch/creation, right before the heartbeats it stands for.
    assert.equal(timeline[timeline.indexOf(omitted[0]!) + 1]!.type, 'deployment.heartbeat');
    assert.ok(timeline.length < 200, `${timeline.length} entries`);
  } finally {
    await done();
  }
});

test('a short timeline is complete; another project sees a 404, and so does a deleted deployment', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id);
    for (let i = 0; i < 3; i++) {
      const beat = await app.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${id}/heartbeat`,
        headers: server.auth,
        payload: { progress: 10 * i },
      });
      assert.equal(beat.statusCode, 200);
    }
    const full = await app.inject({ url: `/v1/default/software_deployments/${id}/timeline`, headers: ADMIN });
    // Heartbeats within 10 s of the first are one entry, showing the latest and how many it stands for.
    const timeline = full.json<{ timeline: Entry[] }>().timeline;
    assert.deepEqual(
      timeline.map((e) => e.type),
      ['deployment.created', 'deployment.heartbeat'],
    );
    assert.match(timeline[1]!.message, /^Heartbeat \(3 since \S+\) \(20%\)$/);

    await app.services.store.write(async ({ trx, now }) => {
      await trx.insertInto('projects').values({ id: 'other', name: 'other', created_at: now }).execute();
    });
    const foreign = await app.inject({ url: `/v1/other/software_deployments/${id}/timeline`, headers: ADMIN });
    assert.equal(foreign.statusCode, 404);
    assert.equal(errorCode(foreign), 'ERR_DEPLOYMENT_NOT_FOUND');

    const deleted = await app.inject({ method: 'DELETE', url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
    assert.equal(deleted.statusCode, 204);
    const gone = await app.inject({ url: `/v1/default/software_deployments/${id}/timeline`, headers: ADMIN });
    assert.equal(gone.statusCode, 404);
    assert.equal(errorCode(gone), 'ERR_DEPLOYMENT_NOT_FOUND');
  } finally {
    await done();
  }
});
