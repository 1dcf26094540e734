import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../test-support.ts';

test('a deployment set IN_PROGRESS again without a new action refuses the same keyless signal, saying why and what to do', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id);
    const signal = () =>
      app.inject({ method: 'POST', url: `/v1/guest/deployments/${id}/signal`, headers: server.auth, payload: { deploy_status_code: 0 } });
    assert.equal((await signal()).json().status, 'COMPLETE');
    const rearmed = await app.inject({
      method: 'PUT',
      url: `/v1/default/software_deployments/${id}`,
      headers: ADMIN,
      payload: { status: 'IN_PROGRESS' },
    });
    assert.equal(rearmed.json().software_deployment.status, 'IN_PROGRESS', rearmed.body);
    const again = await signal();
    assert.equal(again.statusCode, 400);
    assert.equal(errorCode(again), 'ERR_SIGNAL_INVALID');
    assert.match(again.json().error.message, /already applied to this action before the deployment was set IN_PROGRESS again/);
    assert.doesNotMatch(again.json().error.message, /this Idempotency-Key was already used/, 'no key was sent');
    // With a key of its own, the agent's signal settles the re-armed deployment.
    const keyed = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/signal`,
      headers: { ...server.auth, 'idempotency-key': 'rerun-1' },
      payload: { deploy_status_code: 0 },
    });
    assert.equal(keyed.statusCode, 200, keyed.body);
    assert.equal(keyed.json().status, 'COMPLETE');
  } finally {
    await done();
  }
});

test('a NUL in what an agent sends never costs its signal: stored the same on every store, free text shows it as \\u0000', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id);
    const heartbeat = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${id}/heartbeat`,
      headers: server.auth,
      payload: { message: 'step\u00001' },
    });
    assert.equal(heartbeat.statusCode, 200, heartbeat.body);
    const payload = { deploy_stdout: 'out\u0000put', deploy_status_code: 0, oops: 'bad\u0000byte', result: 'r\u0000' };
    const signal = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${id}/signal`, headers: server.auth, payload });
    assert.equal(signal.statusCode, 200, signal.body);
    assert.equal(signal.json().status, 'FAILED');
    assert.equal(signal.json().status_reason, 'oops : bad\\u0000byte');
    const again = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${id}/signal`, headers: server.auth, payload });
    assert.equal(again.json().duplicate, true, again.body);
    const shown = await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN });
    const deployment = shown.json().software_deployment;
    assert.equal(deployment.status_reason, 'oops : bad\\u0000byte');
    // Values keep their NUL exactly: they are stored as JSON, which escapes it.
    assert.equal(deployment.output_values.deploy_stdout, 'out\u0000put');
    assert.equal(deployment.output_values.result, 'r\u0000');
    const events = await app.inject({ url: `/v1/default/events?resource_id=${id}`, headers: ADMIN });
    const messages = events.json<{ events: Array<{ message: string }> }>().events.map((e) => e.message);
    assert.ok(messages.includes('Heartbeat: step\\u00001'), messages.join('\n'));
    assert.ok(
      messages.some((m) => m.endsWith('oops : bad\\u0000byte')),
      messages.join('\n'),
    );
  } finally {
    await done();
  }
});

test('a NUL in a string deploy_status_code never costs its signal: it fails the deployment, and the event shows it as \\u0000', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const id = await createDeployment(app, await createConfig(app), server.id);
    const payload = { deploy_status_code: '1\u0000', deploy_stdout: 'out' };
    const signal = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${id}/signal`, headers: server.auth, payload });
    assert.equal(signal.statusCode, 200, signal.body);
    assert.equal(signal.json().status, 'FAILED');
    assert.equal(signal.json().status_reason, 'deploy_status_code : Deployment exited with non-zero status code: 1\\u0000');
    const deployment = (await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN })).json().software_deployment;
    assert.equal(deployment.status, 'FAILED');
    assert.equal(deployment.output_values.deploy_status_code, '1\u0000', 'the value itself is kept exactly');
    const events = await app.inject({ url: `/v1/default/events?resource_id=${id}`, headers: ADMIN });
    const failed = events
      .json<{ events: Array<{ type: string; message: string; data: Record<string, unknown> }> }>()
      .events.find((e) => e.type === 'deployment.failed');
    assert.ok(failed?.message.startsWith('Signal received from the agent (status code 1\\u0000): deployment'), failed?.message);
    assert.equal(failed?.data.deploy_status_code, '1\u0000');
  } finally {
    await done();
  }
});

test('a heartbeat or signal sent as soon as the metadata arrives shows after the fetch in the timeline, however late the fetch record', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const config = await createConfig(app);
    const [beating, signalled] = [await createDeployment(app, config, server.id), await createDeployment(app, config, server.id)];
    // The fetch is recorded in a write of its own, after the reply: here that write waits 300 ms to be queued,
    // as a busy PostgreSQL pool can make it, while the agent heartbeats and signals at once.
    const store = app.services.store;
    const write = store.write.bind(store);
    store.write = async (unit) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      return write(unit);
    };
    let metadata;
    try {
      metadata = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    } finally {
      store.write = write;
    }
    assert.equal(metadata.statusCode, 200, metadata.body);
    const [heartbeat, signal] = await Promise.all([
      app.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${beating}/heartbeat`,
        headers: server.auth,
        payload: { message: 'step 1' },
      }),
      app.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${signalled}/signal`,
        headers: server.auth,
        payload: { deploy_status_code: 0 },
      }),
    ]);
    assert.equal(heartbeat.statusCode, 200, heartbeat.body);
    assert.equal(signal.statusCode, 200, signal.body);
    const types = async (id: string) =>
      (await app.inject({ url: `/v1/default/software_deployments/${id}/timeline`, headers: ADMIN }))
        .json<{ timeline: Array<{ type: string }> }>()
        .timeline.map((e) => e.type);
    assert.deepEqual(await types(beating), ['deployment.created', 'deployment.fetched', 'deployment.heartbeat']);
    assert.deepEqual(await types(signalled), ['deployment.created', 'deployment.fetched', 'deployment.completed']);
  } finally {
    await done();
  }
});
