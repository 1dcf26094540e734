import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, testApp } from '../../test-support.ts';

interface Deployment {
  action: string;
  status: string;
  status_reason: string;
  derived_config_id: string;
}
interface Entry {
  name: string;
  config: unknown;
  inputs: Array<{ name: string; value?: unknown }>;
}

const request = (app: FastifyInstance, method: 'POST' | 'PUT', url: string, payload: Record<string, unknown>) =>
  app.inject({ method, url: `/v1/default${url}`, headers: ADMIN, payload });

const entries = async (app: FastifyInstance, serverId: string): Promise<Entry[]> =>
  (await app.inject({ url: `/v1/default/software_deployments/metadata/${serverId}`, headers: ADMIN })).json<{ metadata: Entry[] }>()
    .metadata;

// Heat drops null-valued keys of input and output items before it applies their defaults.
test('config items with null-valued keys are stored as if the keys were absent', async () => {
  const { app, done } = await testApp();
  try {
    const reply = await request(app, 'POST', '/software_configs', {
      inputs: [{ name: 'a', type: null, description: null, default: null, replace_on_change: null, value: null }],
      outputs: [{ name: 'o', type: null, description: null, error_output: null }],
    });
    assert.equal(reply.statusCode, 200, reply.body);
    const config = reply.json<{ software_config: { inputs: unknown[]; outputs: unknown[] } }>().software_config;
    assert.deepEqual(config.inputs, [{ name: 'a', type: 'String' }]);
    assert.deepEqual(config.outputs, [{ name: 'o', type: 'String', error_output: false }]);
    // Heat reads only true/false (any case) as a boolean item key (heat-conversions.test.ts).
    const bad = await request(app, 'POST', '/software_configs', { inputs: [{ name: 'a', replace_on_change: 'yes' }] });
    assert.equal(bad.statusCode, 400, bad.body);
    assert.equal(errorCode(bad), 'ERR_CONFIG_INVALID');
  } finally {
    await done();
  }
});

// Heat's `action` is any string (heatclient: "This can be a custom action"); it reaches the hook as deploy_action.
test('a deployment takes a custom action at create and update; null or empty values are defaults or skipped', async () => {
  const { app, done } = await testApp();
  try {
    const configId = await createConfig(app);
    const created = await request(app, 'POST', '/software_deployments', { config_id: configId, server_id: 'vm-a', action: 'BACKUP' });
    assert.equal(created.statusCode, 200, created.body);
    const deployment = created.json<{ software_deployment: Deployment & { id: string } }>().software_deployment;
    assert.equal(deployment.action, 'BACKUP');
    const deployAction = async () => (await entries(app, 'vm-a'))[0]!.inputs.find((i) => i.name === 'deploy_action')?.value;
    assert.equal(await deployAction(), 'BACKUP');

    const defaults = await request(app, 'POST', '/software_deployments', {
      config_id: configId,
      server_id: 'vm-b',
      action: null,
      status: null,
    });
    assert.equal(defaults.statusCode, 200, defaults.body);
    assert.equal(defaults.json<{ software_deployment: Deployment }>().software_deployment.action, 'CREATE');
    assert.equal(defaults.json<{ software_deployment: Deployment }>().software_deployment.status, 'IN_PROGRESS');

    const updated = await request(app, 'PUT', `/software_deployments/${deployment.id}`, { action: 'RESTORE' });
    assert.equal(updated.statusCode, 200, updated.body);
    const restored = updated.json<{ software_deployment: Deployment }>().software_deployment;
    assert.equal(restored.action, 'RESTORE');
    assert.notEqual(restored.derived_config_id, deployment.derived_config_id);
    assert.equal(await deployAction(), 'RESTORE');

    // Heat skips every empty value of an update: `action: ""` neither fails nor starts an action.
    const skipped = await request(app, 'PUT', `/software_deployments/${deployment.id}`, { action: '', status: 'COMPLETE' });
    assert.equal(skipped.statusCode, 200, skipped.body);
    const complete = skipped.json<{ software_deployment: Deployment }>().software_deployment;
    assert.equal(complete.action, 'RESTORE');
    assert.equal(complete.status, 'COMPLETE');
    assert.equal(complete.derived_config_id, restored.derived_config_id);

    const empty = await request(app, 'POST', '/software_deployments', { config_id: configId, server_id: 'vm-c', action: '' });
    assert.equal(empty.statusCode, 400, empty.body);
    assert.equal(errorCode(empty), 'ERR_REQUEST_INVALID');
    const long = await request(app, 'POST', '/software_deployments', { config_id: configId, server_id: 'vm-c', action: 'A'.repeat(256) });
    assert.equal(long.statusCode, 400, long.body);
    const listed = await app.inject({ url: '/v1/default/software_deployments?server_id=vm-c', headers: ADMIN });
    assert.deepEqual(listed.json<{ software_deployments: unknown[] }>().software_deployments, []);
  } finally {
    await done();
  }
});

// Heat's entry is `config or ''`: hook-script writes it to a file, and writing null is a TypeError.
test('a config created without a body reaches the server as "" in its metadata entry', async () => {
  const { app, done } = await testApp();
  try {
    const created = await request(app, 'POST', '/software_configs', { name: '', group: 'script' });
    assert.equal(created.statusCode, 200, created.body);
    const configId = created.json<{ software_config: { id: string; config: unknown } }>().software_config.id;
    const deploymentId = await createDeployment(app, configId, 'vm-a');
    const [entry] = await entries(app, 'vm-a');
    assert.equal(entry!.config, '');
    // An empty name falls back to the deployment's id, as Heat's falls back to the resource's name.
    assert.equal(entry!.name, deploymentId);
  } finally {
    await done();
  }
});
