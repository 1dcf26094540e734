// Where hearth's software_configs and software_deployments answered a Heat client differently from
// Heat: the order of the config list, the reason an update kept, and numbers where Heat takes text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, testApp } from '../../test-support.ts';

const call = (app: FastifyInstance, method: 'GET' | 'POST' | 'PUT', url: string, payload?: Record<string, unknown>) =>
  app.inject({ method, url: `/v1/default${url}`, headers: ADMIN, ...(payload && { payload }) });
const listedIds = async (app: FastifyInstance, query = '') => {
  const reply = await call(app, 'GET', `/software_configs${query}`);
  assert.equal(reply.statusCode, 200, reply.body);
  return reply.json<{ software_configs: Array<{ id: string }> }>().software_configs.map((c) => c.id);
};

// Heat's software_config_get_all pages with its default sort: created_at, then id, both descending.
test('GET /software_configs lists newest first, as Heat does; limit and marker page on to older ones', async () => {
  const { app, done } = await testApp();
  try {
    const created: string[] = [];
    for (let i = 0; i < 4; i++) {
      created.push(await createConfig(app, { name: `cfg-${i}` }));
      await sleep(5); // a later creation_time each, so creation order alone decides
    }
    const newestFirst = [...created].reverse();
    assert.deepEqual(await listedIds(app), newestFirst);
    assert.deepEqual(await listedIds(app, '?limit=1'), newestFirst.slice(0, 1), 'limit=1 is the newest config');
    assert.deepEqual(await listedIds(app, '?limit=2'), newestFirst.slice(0, 2));
    assert.deepEqual(await listedIds(app, `?limit=2&marker=${newestFirst[1]!}`), newestFirst.slice(2));
    assert.deepEqual(await listedIds(app, `?marker=${newestFirst[3]!}`), [], 'after the oldest: nothing');
  } finally {
    await done();
  }
});

// Heat's update_software_deployment applies status_reason only when given: a PUT that sets a
// status without one keeps the stored reason, new action or not.
test('PUT with a new action and a status but no status_reason keeps the stored reason, as Heat does', async () => {
  const { app, done } = await testApp();
  try {
    const configId = await createConfig(app);
    const id = await createDeployment(app, configId, 'vm-1', { status: 'COMPLETE', status_reason: 'Outputs received' });
    const put = async (payload: Record<string, unknown>) => {
      const reply = await call(app, 'PUT', `/software_deployments/${id}`, payload);
      assert.equal(reply.statusCode, 200, reply.body);
      const {
        action,
        status,
        status_reason: reason,
      } = reply.json<{
        software_deployment: { action: string; status: string; status_reason: string };
      }>().software_deployment;
      return { action, status, reason };
    };
    assert.deepEqual(await put({ action: 'UPDATE', status: 'FAILED' }), { action: 'UPDATE', status: 'FAILED', reason: 'Outputs received' });
    assert.deepEqual(await put({ input_values: { a: 1 }, status: 'COMPLETE', status_reason: 'by hand' }), {
      action: 'UPDATE',
      status: 'COMPLETE',
      reason: 'by hand',
    });
    assert.deepEqual(await put({ config_id: configId, status: 'COMPLETE' }), { action: 'UPDATE', status: 'COMPLETE', reason: 'by hand' });
    // Without a status, a new action is hearth's to start: IN_PROGRESS with its reason.
    assert.deepEqual(await put({ action: 'SUSPEND' }), { action: 'SUSPEND', status: 'IN_PROGRESS', reason: 'Deploy data available' });
    const shown = await call(app, 'GET', `/software_deployments/${id}`);
    assert.equal(
      shown.json<{ software_deployment: { status_reason: string } }>().software_deployment.status_reason,
      'Deploy data available',
    );
  } finally {
    await done();
  }
});

// Heat stores a config's name in a string field (int → str) and reads an item's description as a
// String property (int and bool → str; a fraction is a ValueError, a 400).
test('a whole-number config name and a whole-number or boolean item description are stored as text, as Heat stores them', async () => {
  const { app, done } = await testApp();
  try {
    const reply = await call(app, 'POST', '/software_configs', {
      name: 2024,
      group: 'script',
      inputs: [
        { name: 'port', description: 7 },
        { name: 'flag', description: true, type: 'Boolean' },
      ],
      outputs: [{ name: 'result', description: false }],
    });
    assert.equal(reply.statusCode, 200, reply.body);
    const { id, ...config } = reply.json<{ software_config: Record<string, unknown> & { id: string } }>().software_config;
    assert.equal(config.name, '2024');
    assert.deepEqual(config.inputs, [
      { name: 'port', type: 'String', description: '7' },
      { name: 'flag', type: 'Boolean', description: 'True' },
    ]);
    assert.deepEqual(config.outputs, [{ name: 'result', type: 'String', description: 'False', error_output: false }]);
    const shown = await call(app, 'GET', `/software_configs/${id}`);
    assert.deepEqual(shown.json<{ software_config: Record<string, unknown> }>().software_config, { id, ...config }, 'stored as text');
    const listed = await call(app, 'GET', '/software_configs');
    assert.deepEqual(
      listed.json<{ software_configs: Array<{ name: string }> }>().software_configs.map((c) => c.name),
      ['2024'],
    );

    // What Heat refuses, or what a number cannot say exactly, stays a coded 400 that stores nothing.
    for (const body of [
      { inputs: [{ name: 'i', description: 1.5 }] },
      { outputs: [{ name: 'o', description: 2 ** 60 }] },
      { inputs: [{ name: 'i', description: { text: 'x' } }] },
      { name: true },
      { name: 2 ** 60 },
      { name: 1.5 },
    ]) {
      const bad = await call(app, 'POST', '/software_configs', body);
      assert.equal(bad.statusCode, 400, `${JSON.stringify(body)}: ${bad.body}`);
      assert.equal(errorCode(bad), 'ERR_REQUEST_INVALID');
    }
    assert.equal((await app.services.store.reader.selectFrom('software_configs').select('id').execute()).length, 1);
  } finally {
    await done();
  }
});
