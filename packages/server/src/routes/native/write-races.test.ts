// A write that checks what it depends on (config, stack, wait condition) outside its transaction
// can lose that thing before it commits. Each test here lets a competing request win that race
// deterministically: it runs just before the next unit reaches the writer, as if it had been
// queued first. The loser must get a coded 4xx, never a 500 nor a half-written row.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, testApp, beforeWrite } from '../../test-support.ts';

const storeOf = (app: FastifyInstance) => app.services.store;

async function createStack(app: FastifyInstance, name: string): Promise<void> {
  const reply = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: name } });
  assert.equal(reply.statusCode, 201, reply.body);
}

async function orphanDeployments(app: FastifyInstance): Promise<number> {
  const rows = await storeOf(app)
    .reader.selectFrom('software_deployments')
    .leftJoin('stacks', 'stacks.id', 'software_deployments.stack_id')
    .select(['software_deployments.id'])
    .where('software_deployments.stack_id', 'is not', null)
    .where('stacks.id', 'is', null)
    .execute();
  return rows.length;
}

test('a deployment created while its config is deleted: coded 404, nothing written', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const configId = await createConfig(app);
    await app.inject({ url: `/v1/default/software_configs/${configId}`, headers: ADMIN }); // cached, as in the report
    const deleted = beforeWrite(storeOf(app), () =>
      app.inject({ method: 'DELETE', url: `/v1/default/software_configs/${configId}`, headers: ADMIN }),
    );
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: configId, server_id: 'vm-a', signal_transport: 'TEMP_URL_SIGNAL' },
    });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(created.statusCode, 404, created.body);
    assert.equal(errorCode(created), 'ERR_CONFIG_NOT_FOUND');
    const reader = storeOf(app).reader;
    assert.equal((await reader.selectFrom('software_deployments').select('id').execute()).length, 0);
    assert.equal(
      (await reader.selectFrom('resource_credentials').select('access_key_id').where('kind', '=', 'deployment').execute()).length,
      0,
    );
  } finally {
    await done();
  }
});

test('a deployment updated to a config that is deleted meanwhile: coded 404, unchanged', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const first = await createConfig(app);
    const second = await createConfig(app, { name: 'second' });
    const deploymentId = await createDeployment(app, first, 'vm-a');
    const deleted = beforeWrite(storeOf(app), () =>
      app.inject({ method: 'DELETE', url: `/v1/default/software_configs/${second}`, headers: ADMIN }),
    );
    const updated = await app.inject({
      method: 'PUT',
      url: `/v1/default/software_deployments/${deploymentId}`,
      headers: ADMIN,
      payload: { config_id: second },
    });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(updated.statusCode, 404, updated.body);
    assert.equal(errorCode(updated), 'ERR_CONFIG_NOT_FOUND');
    const shown = await app.inject({ url: `/v1/default/software_deployments/${deploymentId}`, headers: ADMIN });
    assert.equal(shown.json<{ software_deployment: { config_id: string } }>().software_deployment.config_id, first);
  } finally {
    await done();
  }
});

test('a deployment created in a stack that is deleted meanwhile: coded 404, no orphan', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const configId = await createConfig(app);
    await createStack(app, 'web');
    const deleted = beforeWrite(storeOf(app), () => app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN }));
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: configId, server_id: 'vm-a', stack: 'web' },
    });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(created.statusCode, 404, created.body);
    assert.equal(errorCode(created), 'ERR_STACK_NOT_FOUND');
    assert.equal(await orphanDeployments(app), 0);
  } finally {
    await done();
  }
});

test('a stack deleted while a deployment is created in it: the delete is refused with 409', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const configId = await createConfig(app);
    await createStack(app, 'web');
    const created = beforeWrite(storeOf(app), () =>
      app.inject({
        method: 'POST',
        url: '/v1/default/software_deployments',
        headers: ADMIN,
        payload: { config_id: configId, server_id: 'vm-a', stack: 'web' },
      }),
    );
    const deleted = await app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN });
    assert.equal(created.reply().statusCode, 200, created.reply().body);
    assert.equal(deleted.statusCode, 409, deleted.body);
    assert.equal(errorCode(deleted), 'ERR_STACK_NOT_EMPTY');
  } finally {
    await done();
  }
});

test('a stack deleted twice at once: the second gets a coded 404', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await createStack(app, 'web');
    const first = beforeWrite(storeOf(app), () => app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN }));
    const second = await app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN });
    assert.equal(first.reply().statusCode, 204, first.reply().body);
    assert.equal(second.statusCode, 404, second.body);
    assert.equal(errorCode(second), 'ERR_STACK_NOT_FOUND');
  } finally {
    await done();
  }
});

test('a wait condition created in a stack that is deleted meanwhile: coded 404, not a 500', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await createStack(app, 'web');
    const deleted = beforeWrite(storeOf(app), () => app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN }));
    const created = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/wait_conditions',
      headers: ADMIN,
      payload: { name: 'ready', timeout: 600 },
    });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(created.statusCode, 404, created.body);
    assert.equal(errorCode(created), 'ERR_STACK_NOT_FOUND');
  } finally {
    await done();
  }
});

test('a heartbeat (or second delete) of a wait condition deleted meanwhile: coded 404, not a 500', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await createStack(app, 'web');
    for (const name of ['one', 'two']) {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/default/stacks/web/wait_conditions',
        headers: ADMIN,
        payload: { name, timeout: 600 },
      });
      assert.equal(reply.statusCode, 201, reply.body);
    }
    const deleteCondition = (name: string) =>
      app.inject({ method: 'DELETE', url: `/v1/default/stacks/web/wait_conditions/${name}`, headers: ADMIN });

    const deleted = beforeWrite(storeOf(app), () => deleteCondition('one'));
    const heartbeat = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/wait_conditions/one/heartbeat',
      headers: ADMIN,
      payload: {},
    });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(heartbeat.statusCode, 404, heartbeat.body);
    assert.equal(errorCode(heartbeat), 'ERR_WAIT_CONDITION_NOT_FOUND');

    const first = beforeWrite(storeOf(app), () => deleteCondition('two'));
    const second = await deleteCondition('two');
    assert.equal(first.reply().statusCode, 204, first.reply().body);
    assert.equal(second.statusCode, 404, second.body);
    assert.equal(errorCode(second), 'ERR_WAIT_CONDITION_NOT_FOUND');
    const events = await storeOf(app).reader.selectFrom('events').select('id').where('type', '=', 'wait_condition.deleted').execute();
    assert.equal(events.length, 2, 'one deletion event per condition');
  } finally {
    await done();
  }
});

/** Resolves after `turns` turns of the event loop. */
async function turns(count: number): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise((resolve) => setImmediate(resolve));
}

test('creates and deletes sent together, the deletes 0..n loop turns later: no 500, no orphan', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const sharedConfig = await createConfig(app);
    // In-process, a bodiless DELETE overtakes a POST sent with it; delaying the deletes by a
    // growing number of turns sweeps them across the window between a create's checks and its write.
    for (let delay = 0; delay < 16; delay++) {
      const configId = await createConfig(app, { name: `race${delay}` });
      await app.inject({ url: `/v1/default/software_configs/${configId}`, headers: ADMIN });
      await createStack(app, `st${delay}`);
      const condition = await app.inject({
        method: 'POST',
        url: `/v1/default/stacks/st${delay}/wait_conditions`,
        headers: ADMIN,
        payload: { name: 'wc', timeout: 600 },
      });
      assert.equal(condition.statusCode, 201, condition.body);
      const writes = [
        app.inject({
          method: 'POST',
          url: '/v1/default/software_deployments',
          headers: ADMIN,
          payload: { config_id: configId, server_id: 'vm-a' },
        }),
        app.inject({
          method: 'POST',
          url: '/v1/default/software_deployments',
          headers: ADMIN,
          payload: { config_id: sharedConfig, server_id: 'vm-b', stack: `st${delay}` },
        }),
        app.inject({ method: 'POST', url: `/v1/default/stacks/st${delay}/wait_conditions/wc/heartbeat`, headers: ADMIN, payload: {} }),
      ];
      await turns(delay);
      const deletes = [
        app.inject({ method: 'DELETE', url: `/v1/default/software_configs/${configId}`, headers: ADMIN }),
        app.inject({ method: 'DELETE', url: `/v1/default/stacks/st${delay}/wait_conditions/wc`, headers: ADMIN }),
        app.inject({ method: 'DELETE', url: `/v1/default/stacks/st${delay}`, headers: ADMIN }),
      ];
      const [create, createInStack, heartbeat, deleteConfig, deleteCondition, deleteStack] = await Promise.all([...writes, ...deletes]);
      for (const [name, reply] of Object.entries({ create, createInStack, heartbeat, deleteConfig, deleteCondition, deleteStack })) {
        assert.ok(reply!.statusCode < 500, `delay ${delay}, ${name}: ${reply!.body}`);
        if (reply!.statusCode >= 400) assert.match(errorCode(reply!), /^ERR_/);
      }
      const outcome = `create ${create!.statusCode}, delete config ${deleteConfig!.statusCode}`;
      assert.ok(['create 404, delete config 204', 'create 200, delete config 409'].includes(outcome), `delay ${delay}: ${outcome}`);
    }
    assert.equal(await orphanDeployments(app), 0);
  } finally {
    await done();
  }
});

test('a server or scaling group put in a stack that is deleted meanwhile: coded 404, nothing left in the stack', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const requests = [
      { url: '/v1/default/servers', payload: { name: 'vm', stack: 'web' }, table: 'servers' as const },
      {
        url: '/v1/default/stacks/web/scaling_groups',
        // Never contacted: the create fails before any change is delivered.
        payload: { name: 'g', min_size: 0, max_size: 1, actuator: { url: 'http://127.0.0.1:9/actuator', secret: 'actuator-secret-0123' } },
        table: 'scaling_groups' as const,
      },
    ];
    for (const { url, payload, table } of requests) {
      await createStack(app, 'web');
      const deleted = beforeWrite(storeOf(app), () => app.inject({ method: 'DELETE', url: '/v1/default/stacks/web', headers: ADMIN }));
      const created = await app.inject({ method: 'POST', url, headers: ADMIN, payload });
      assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
      assert.equal(created.statusCode, 404, `${url}: ${created.body}`);
      assert.equal(errorCode(created), 'ERR_STACK_NOT_FOUND');
      assert.equal((await storeOf(app).reader.selectFrom(table).select('id').execute()).length, 0, table);
    }
  } finally {
    await done();
  }
});

test('a scaling policy created while its group is deleted: coded 404, no orphan policy; a second delete is a 404', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await createStack(app, 'web');
    const group = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_groups',
      headers: ADMIN,
      // Never contacted: a group of 0 members changes nothing at the actuator before it is deleted.
      payload: { name: 'g', min_size: 0, max_size: 1, actuator: { url: 'http://127.0.0.1:9/actuator', secret: 'actuator-secret-0123' } },
    });
    assert.equal(group.statusCode, 201, group.body);
    const deleted = beforeWrite(storeOf(app), () =>
      app.inject({ method: 'DELETE', url: '/v1/default/stacks/web/scaling_groups/g', headers: ADMIN }),
    );
    const policy = await app.inject({
      method: 'POST',
      url: '/v1/default/stacks/web/scaling_policies',
      headers: ADMIN,
      payload: { name: 'up', group: 'g', adjustment_type: 'change_in_capacity', scaling_adjustment: 1 },
    });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(policy.statusCode, 404, policy.body);
    assert.equal(errorCode(policy), 'ERR_SCALING_GROUP_NOT_FOUND');
    assert.equal((await storeOf(app).reader.selectFrom('scaling_policies').select('id').execute()).length, 0);
  } finally {
    await done();
  }
});
