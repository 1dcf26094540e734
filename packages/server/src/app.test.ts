import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { InjectOptions } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, TEST_DIALECT, testApp } from './test-support.ts';

test('Heat-shaped calls work on a fresh data dir with only X-Auth-Token (default project)', async () => {
  const { app, done } = await testApp();
  try {
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/software_configs',
      headers: ADMIN,
      payload: {
        name: 'c1',
        group: 'script',
        config: 'echo',
        inputs: [{ name: 'foo', default: 'bar', description: null }],
        outputs: [{ name: 'out' }],
        options: {},
      },
    });
    assert.equal(created.statusCode, 200);
    const config = created.json().software_config;
    assert.deepEqual(config.inputs, [{ name: 'foo', type: 'String', default: 'bar' }]);
    assert.deepEqual(config.outputs, [{ name: 'out', type: 'String', error_output: false }]);
    assert.match(config.creation_time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const listed = await app.inject({ url: '/v1/default/software_configs', headers: ADMIN });
    assert.deepEqual(listed.json().software_configs, [{ id: config.id, name: 'c1', group: 'script', creation_time: config.creation_time }]);

    const deployment = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: {
        config_id: config.id,
        server_id: 'nova-uuid-1',
        input_values: { foo: 'baz' },
        action: 'CREATE',
        status: 'IN_PROGRESS',
        status_reason: 'go',
        stack_user_project_id: 'p',
      },
    });
    assert.equal(deployment.statusCode, 200);
    const d = deployment.json().software_deployment;
    assert.equal(d.status, 'IN_PROGRESS');
    assert.equal(d.action, 'CREATE');
    assert.equal(d.updated_time, undefined);

    const byServer = await app.inject({ url: '/v1/default/software_deployments?server_id=nova-uuid-1', headers: ADMIN });
    assert.deepEqual(
      byServer.json().software_deployments.map((x: { id: string }) => x.id),
      [d.id],
    );
    const metadata = await app.inject({ url: '/v1/default/software_deployments/metadata/nova-uuid-1', headers: ADMIN });
    const [entry] = metadata.json().metadata;
    assert.equal(entry.id, d.derived_config_id);
    assert.equal(entry.inputs.find((i: { name: string }) => i.name === 'foo').value, 'baz');

    const updated = await app.inject({
      method: 'PUT',
      url: `/v1/default/software_deployments/${d.id}`,
      headers: ADMIN,
      payload: { action: 'UPDATE' },
    });
    assert.equal(updated.statusCode, 200);
    assert.notEqual(
      updated.json().software_deployment.derived_config_id,
      d.derived_config_id,
      'a new action gets a fresh derived-config id',
    );
    assert.ok(updated.json().software_deployment.updated_time);

    const inUse = await app.inject({ method: 'DELETE', url: `/v1/default/software_configs/${config.id}`, headers: ADMIN });
    assert.equal(inUse.statusCode, 409);
    assert.equal(errorCode(inUse), 'ERR_CONFIG_IN_USE');
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/default/software_deployments/${d.id}`, headers: ADMIN })).statusCode, 204);
    assert.equal(
      (await app.inject({ method: 'DELETE', url: `/v1/default/software_configs/${config.id}`, headers: ADMIN })).statusCode,
      204,
    );
    assert.equal((await app.inject({ url: `/v1/default/software_configs/${config.id}`, headers: ADMIN })).statusCode, 404);
  } finally {
    await done();
  }
});

test('bad input gets a coded 4xx and changes nothing', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    const deploymentId = await createDeployment(app, configId, server.id);
    const before = await app.inject({ url: `/v1/default/software_deployments/${deploymentId}`, headers: ADMIN });
    const cases: Array<[string, InjectOptions, number, string]> = [
      [
        'malformed JSON',
        {
          method: 'POST',
          url: '/v1/default/software_configs',
          headers: { ...ADMIN, 'content-type': 'application/json' },
          payload: '{"name":',
        },
        400,
        'ERR_REQUEST_BODY_MALFORMED',
      ],
      [
        'wrong type',
        { method: 'POST', url: '/v1/default/software_configs', headers: ADMIN, payload: { name: true } },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'inputs not a list',
        { method: 'POST', url: '/v1/default/software_configs', headers: ADMIN, payload: { inputs: { a: 1 } } },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'bad input type',
        { method: 'POST', url: '/v1/default/software_configs', headers: ADMIN, payload: { inputs: [{ name: 'a', type: 'Float' }] } },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'default of the wrong type',
        {
          method: 'POST',
          url: '/v1/default/software_configs',
          headers: ADMIN,
          payload: { inputs: [{ name: 'a', type: 'Number', default: 'x' }] },
        },
        400,
        'ERR_CONFIG_INVALID',
      ],
      [
        'unknown key',
        {
          method: 'POST',
          url: '/v1/default/software_deployments',
          headers: ADMIN,
          payload: { config_id: configId, server_id: server.id, bogus: 1 },
        },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'unknown config',
        {
          method: 'POST',
          url: '/v1/default/software_deployments',
          headers: ADMIN,
          payload: { config_id: '00000000-0000-4000-8000-000000000000', server_id: server.id },
        },
        404,
        'ERR_CONFIG_NOT_FOUND',
      ],
      [
        'bad action',
        { method: 'PUT', url: `/v1/default/software_deployments/${deploymentId}`, headers: ADMIN, payload: { action: 'A'.repeat(256) } },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'timeout too long',
        { method: 'PUT', url: `/v1/default/software_deployments/${deploymentId}`, headers: ADMIN, payload: { timeout: 10 ** 9 } },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'oversized config',
        { method: 'POST', url: '/v1/default/software_configs', headers: ADMIN, payload: { config: 'x'.repeat(6 * 1024 * 1024) } },
        413,
        'ERR_REQUEST_BODY_TOO_LARGE',
      ],
      [
        'oversized signal',
        {
          method: 'POST',
          url: `/v1/guest/deployments/${deploymentId}/signal`,
          headers: server.auth,
          payload: { deploy_stdout: 'x'.repeat(1024 * 1024 + 10) },
        },
        413,
        'ERR_REQUEST_BODY_TOO_LARGE',
      ],
      [
        'signal not an object',
        { method: 'POST', url: `/v1/guest/deployments/${deploymentId}/signal`, headers: server.auth, payload: '[1,2]' },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'signal with a bad status code type',
        {
          method: 'POST',
          url: `/v1/guest/deployments/${deploymentId}/signal`,
          headers: server.auth,
          payload: { deploy_status_code: { a: 1 } },
        },
        400,
        'ERR_REQUEST_INVALID',
      ],
      [
        'unknown deployment',
        { url: '/v1/default/software_deployments/00000000-0000-4000-8000-000000000000', headers: ADMIN },
        404,
        'ERR_DEPLOYMENT_NOT_FOUND',
      ],
      // As Heat: an id that is not a UUID is one that does not exist.
      ['id that is not a uuid', { url: '/v1/default/software_deployments/nope', headers: ADMIN }, 404, 'ERR_DEPLOYMENT_NOT_FOUND'],
      ['unknown project', { url: '/v1/other/software_configs', headers: ADMIN }, 404, 'ERR_PROJECT_NOT_FOUND'],
      ['no token', { url: '/v1/default/software_configs' }, 401, 'ERR_AUTH_MISSING'],
      ['bad token', { url: '/v1/default/software_configs', headers: { 'x-auth-token': 'wrong' } }, 401, 'ERR_AUTH_INVALID'],
      [
        'bad agent secret',
        { url: '/v1/guest/metadata', headers: { authorization: `Bearer ${server.token.split(':')[0]}:wrong` } },
        401,
        'ERR_AUTH_INVALID',
      ],
      ['bad wait', { url: '/v1/guest/metadata?wait=61', headers: server.auth }, 400, 'ERR_REQUEST_INVALID'],
      ['unknown route', { url: '/v2/nothing' }, 404, 'ERR_ROUTE_NOT_FOUND'],
    ];
    for (const [name, request, status, code] of cases) {
      const reply = await app.inject(request);
      assert.equal(reply.statusCode, status, `${name}: ${reply.body.slice(0, 300)}`);
      assert.equal(errorCode(reply), code, name);
      assert.match(reply.json().error.message, /\w/, name);
    }
    const after = await app.inject({ url: `/v1/default/software_deployments/${deploymentId}`, headers: ADMIN });
    assert.deepEqual(after.json(), before.json(), 'nothing stored changed');
    const configs = await app.inject({ url: '/v1/default/software_configs', headers: ADMIN });
    assert.equal(configs.json().software_configs.length, 1);
  } finally {
    await done();
  }
});

test("a server's credential reaches only its own metadata and deployments", async () => {
  const { app, done } = await testApp();
  try {
    const a = await registerServer(app, 'a');
    const b = await registerServer(app, 'b');
    const configId = await createConfig(app);
    const deploymentOfA = await createDeployment(app, configId, a.id);
    const metaB = await app.inject({ url: '/v1/guest/metadata', headers: b.auth });
    assert.equal(metaB.statusCode, 200);
    assert.deepEqual(metaB.json().deployments, [], "b sees none of a's deployments");
    const denials = [
      await app.inject({ method: 'POST', url: `/v1/guest/deployments/${deploymentOfA}/signal`, headers: b.auth, payload: {} }),
      await app.inject({ method: 'POST', url: `/v1/guest/deployments/${deploymentOfA}/heartbeat`, headers: b.auth, payload: {} }),
      await app.inject({ url: `/v1/default/software_deployments/metadata/${a.id}`, headers: b.auth }),
      await app.inject({ url: `/v1/default/software_deployments/${deploymentOfA}`, headers: b.auth }),
      await app.inject({ url: '/v1/default/servers', headers: b.auth }),
      await app.inject({ method: 'DELETE', url: `/v1/default/servers/${a.id}`, headers: b.auth }),
      await app.inject({ method: 'POST', url: `/v1/guest/deployments/${deploymentOfA}/signal?token=forged`, payload: {} }),
    ];
    for (const reply of denials) assert.ok([401, 403, 404].includes(reply.statusCode), `${reply.statusCode} ${reply.body}`);
    const still = await app.inject({ url: `/v1/default/software_deployments/${deploymentOfA}`, headers: ADMIN });
    assert.equal(still.json().software_deployment.status, 'IN_PROGRESS');
    const own = await app.inject({ url: `/v1/default/software_deployments/metadata/${a.id}`, headers: a.auth });
    assert.equal(own.statusCode, 200);
    assert.equal(own.json().metadata.length, 1);
    const operatorOnGuest = await app.inject({ url: '/v1/guest/metadata', headers: ADMIN });
    assert.equal(operatorOnGuest.statusCode, 403);
    // Deleting a server revokes its credential at once.
    assert.equal((await app.inject({ method: 'DELETE', url: `/v1/default/servers/${b.id}`, headers: ADMIN })).statusCode, 204);
    assert.equal((await app.inject({ url: '/v1/guest/metadata', headers: b.auth })).statusCode, 401);
  } finally {
    await done();
  }
});

test('signals: outputs stored, duplicates idempotent, late signals 409, capability URL works', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    const ok = await createDeployment(app, configId, server.id);
    const signal = { deploy_stdout: 'hi', deploy_stderr: '', deploy_status_code: 0, result: 'R', ignored: 1 };
    const first = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${ok}/signal`, headers: server.auth, payload: signal });
    assert.deepEqual(first.json(), { deployment_id: ok, status: 'COMPLETE', status_reason: 'Outputs received', duplicate: false });
    const again = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${ok}/signal`, headers: server.auth, payload: signal });
    assert.equal(again.statusCode, 200);
    assert.equal(again.json().duplicate, true);
    const late = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${ok}/signal`,
      headers: server.auth,
      payload: { deploy_status_code: 1 },
    });
    assert.equal(late.statusCode, 409);
    assert.equal(errorCode(late), 'ERR_DEPLOYMENT_NOT_IN_PROGRESS');
    const shown = (await app.inject({ url: `/v1/default/software_deployments/${ok}`, headers: ADMIN })).json().software_deployment;
    assert.equal(shown.status, 'COMPLETE');
    assert.deepEqual(shown.output_values, { result: 'R', deploy_stdout: 'hi', deploy_stderr: '', deploy_status_code: 0 });
    const signalsStored = await app.services.store.reader.selectFrom('signals').selectAll().where('deployment_id', '=', ok).execute();
    assert.equal(signalsStored.length, 1, 'the duplicate wrote nothing');

    const failing = await createDeployment(app, configId, server.id);
    const metadata = (await app.inject({ url: '/v1/guest/metadata', headers: server.auth })).json();
    const entry = metadata.deployments.find((d: { inputs: Array<{ name: string; value: string }> }) =>
      d.inputs.some((i) => i.name === 'deploy_signal_id' && i.value.includes(failing)),
    );
    const signalUrl = new URL(entry.inputs.find((i: { name: string }) => i.name === 'deploy_signal_id').value);
    // heat-config-notify's CFN_SIGNAL branch POSTs to deploy_signal_id with no credential at all.
    const viaCapability = await app.inject({
      method: 'POST',
      url: `${signalUrl.pathname}${signalUrl.search}`,
      payload: { deploy_status_code: 2, deploy_stderr: 'boom' },
    });
    assert.equal(viaCapability.statusCode, 200, viaCapability.body);
    assert.equal(viaCapability.json().status, 'FAILED');
    assert.match(viaCapability.json().status_reason, /non-zero status code: 2/);
    // The same capability does not reach another deployment.
    const reused = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${ok}/signal${signalUrl.search}`, payload: {} });
    assert.equal(reused.statusCode, 401);
  } finally {
    await done();
  }
});

test('metadata: strong ETag, 304, HEAD, and a long-poll woken by a new deployment', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    const first = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    const etag = first.headers.etag as string;
    assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
    assert.ok(first.headers['last-modified']);
    assert.equal((await app.inject({ url: '/v1/guest/metadata', headers: { ...server.auth, 'if-none-match': etag } })).statusCode, 304);
    assert.equal((await app.inject({ method: 'HEAD', url: '/v1/guest/metadata', headers: server.auth })).statusCode, 200);

    const started = Date.now();
    const listening = app.services.feed.listenerCount();
    const poll = app.inject({ url: '/v1/guest/metadata?wait=30', headers: { ...server.auth, 'if-none-match': etag } });
    // The poll waits on the feed now (a deployment created before it waits would be answered at once).
    for (let i = 0; i < 1000 && app.services.feed.listenerCount() <= listening; i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(app.services.feed.listenerCount() > listening, 'the long-poll waits');
    const deploymentId = await createDeployment(app, configId, server.id);
    const woken = await poll;
    const elapsed = Date.now() - started;
    assert.equal(woken.statusCode, 200);
    assert.notEqual(woken.headers.etag, etag);
    assert.ok(elapsed < 15_000, `long-poll woke after ${elapsed} ms: by the deployment, not at the end of its 30 s wait`);
    assert.equal(woken.json().deployments.length, 1);

    const quiet = await app.inject({
      url: '/v1/guest/metadata?wait=1',
      headers: { ...server.auth, 'if-none-match': woken.headers.etag as string },
    });
    assert.equal(quiet.statusCode, 304);

    const timeline = (await app.inject({ url: `/v1/default/software_deployments/${deploymentId}/timeline`, headers: ADMIN })).json()
      .timeline;
    assert.deepEqual(
      timeline.map((e: { type: string }) => e.type),
      ['deployment.created', 'deployment.fetched'],
    );
  } finally {
    await done();
  }
});

test('deadlines fail a deployment with a reason that says what happened', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    const neverFetched = await createDeployment(app, configId, 'unregistered-vm', { timeout: 1 });
    const fetchedOnly = await createDeployment(app, configId, server.id, { timeout: 1 });
    // The fetch is recorded after the reply, in a write of its own: waited for, so that the heartbeat below comes after it.
    const fetchRecorded = async (id: string): Promise<void> => {
      for (let tries = 0; tries < 250; tries++) {
        const { timeline } = (await app.inject({ url: `/v1/default/software_deployments/${id}/timeline`, headers: ADMIN })).json<{
          timeline: Array<{ type: string }>;
        }>();
        if (timeline.some((e) => e.type === 'deployment.fetched')) return;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.fail(`the fetch of ${id} was never recorded`);
    };
    await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    await fetchRecorded(fetchedOnly);
    const heartbeating = await createDeployment(app, configId, server.id, { timeout: 1, name: 'hb' });
    await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    await fetchRecorded(heartbeating);
    const beat = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${heartbeating}/heartbeat`,
      headers: server.auth,
      payload: { message: 'installing', progress: 40 },
    });
    assert.equal(beat.statusCode, 200, beat.body);
    const status = async (id: string): Promise<{ status: string; status_reason: string }> =>
      (await app.inject({ url: `/v1/default/software_deployments/${id}?wait=5`, headers: ADMIN })).json<{
        software_deployment: { status: string; status_reason: string };
      }>().software_deployment;
    const a = await status(neverFetched);
    const b = await status(fetchedOnly);
    const c = await status(heartbeating);
    assert.equal(a.status, 'FAILED');
    assert.match(a.status_reason, /never fetched this deployment.*never called/);
    assert.equal(b.status, 'FAILED');
    assert.match(b.status_reason, /fetched the deployment at .* but never signalled/);
    assert.equal(c.status, 'FAILED');
    assert.match(c.status_reason, /stopped heartbeating/);
    const timeline = (await app.inject({ url: `/v1/default/software_deployments/${heartbeating}/timeline`, headers: ADMIN })).json()
      .timeline;
    assert.deepEqual(
      timeline.map((e: { type: string }) => e.type),
      ['deployment.created', 'deployment.fetched', 'deployment.heartbeat', 'deployment.timed_out'],
    );
    assert.equal(timeline[2].message, 'Heartbeat (40%): installing');
    const late = await app.inject({
      method: 'POST',
      url: `/v1/guest/deployments/${fetchedOnly}/signal`,
      headers: server.auth,
      payload: {},
    });
    assert.equal(late.statusCode, 409);
  } finally {
    await done();
  }
});

test('events: cursor paging and types', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    await createDeployment(app, configId, server.id);
    const page1 = (await app.inject({ url: '/v1/default/events?limit=2', headers: ADMIN })).json();
    assert.deepEqual(
      page1.events.map((e: { type: string }) => e.type),
      ['server.created', 'config.created'],
    );
    const page2 = (await app.inject({ url: `/v1/default/events?after=${page1.next_cursor}`, headers: ADMIN })).json();
    assert.deepEqual(
      page2.events.map((e: { type: string }) => e.type),
      ['deployment.created'],
    );
    const bad = await app.inject({ url: '/v1/default/events?after=abc', headers: ADMIN });
    assert.equal(errorCode(bad), 'ERR_EVENT_CURSOR_INVALID');
  } finally {
    await done();
  }
});

test('ops: healthz, readyz, metrics, OpenAPI docs', async () => {
  const { app, done } = await testApp();
  try {
    assert.equal((await app.inject('/healthz')).statusCode, 200);
    assert.deepEqual((await app.inject('/readyz')).json(), { status: 'ready', store: TEST_DIALECT });
    // The gauge is there and drops to 0 when nothing is queued. A background write (the alarm
    // evaluator's lease, a deliverer's poll) may be in flight at any one instant, so poll for it.
    let metrics = await app.inject('/metrics');
    for (let i = 0; i < 60 && !/hearth_write_queue_depth 0\n/.test(metrics.body); i++) {
      assert.match(metrics.body, /hearth_write_queue_depth \d+\n/);
      await new Promise((resolve) => setTimeout(resolve, 50));
      metrics = await app.inject('/metrics');
    }
    assert.match(metrics.body, /hearth_write_queue_depth 0\n/);
    // What the caches hold, by size: a config read and a document built show in them.
    const server = await registerServer(app);
    await createDeployment(app, await createConfig(app), server.id);
    const document = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    metrics = await app.inject('/metrics');
    assert.equal(Number(/^hearth_metadata_cache_characters (\d+)$/m.exec(metrics.body)?.[1]), document.body.length);
    assert.ok(Number(/^hearth_config_cache_characters (\d+)$/m.exec(metrics.body)?.[1]) > 0, metrics.body);
    const docs = await app.inject('/docs/json');
    assert.ok(docs.json().paths['/v1/guest/metadata']);
  } finally {
    await done();
  }
});

test('a signal or heartbeat with no body at all counts as {}', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const deploymentId = await createDeployment(app, await createConfig(app), server.id);
    const beat = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${deploymentId}/heartbeat`, headers: server.auth });
    assert.equal(beat.statusCode, 200, beat.body);
    const signal = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${deploymentId}/signal`, headers: server.auth });
    assert.equal(signal.statusCode, 200, signal.body);
    assert.equal(signal.json().status, 'COMPLETE');
  } finally {
    await done();
  }
});

test('deployment ids are time-ordered UUIDs (v7): later deployments sort after earlier ones', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app);
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await createDeployment(app, configId, server.id));
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual([...ids].sort(), ids, 'ids sort in creation order');
    const millis = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);
    assert.ok(Math.abs(millis(ids[0]!) - Date.now()) < 60_000, 'the leading 48 bits are the creation time in ms');
    // They are still canonical UUIDs: the guest routes take them.
    const signal = await app.inject({ method: 'POST', url: `/v1/guest/deployments/${ids[0]}/signal`, headers: server.auth, payload: {} });
    assert.equal(signal.statusCode, 200, signal.body);
  } finally {
    await done();
  }
});
