import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type TestServer } from '../../../test/helpers/server.ts';
import { createClient, type HearthClient } from './index.ts';
import { HearthApiError } from './errors.ts';

// End-to-end: the client against a real hearth-server on 127.0.0.1, in this process.

let server: TestServer;
let operator: HearthClient;

before(async () => {
  server = await startServer();
  operator = createClient({ url: server.url, token: server.token });
});
after(() => server.close());

/** Registers a server, creates a config and deploys it; returns the agent client and the deployment id. */
async function deployOne(name: string): Promise<{ agent: HearthClient; deploymentId: string; serverId: string }> {
  const { server: registered, credential } = await operator.createServer({ name });
  const config = await operator.createConfig({ name, group: 'script', config: 'echo hi', outputs: [{ name: 'answer' }] });
  const deployment = await operator.createDeployment({ config_id: config.id, server_id: registered.id });
  return { agent: createClient({ url: server.url, token: credential.token }), deploymentId: deployment.id, serverId: registered.id };
}

test('operator CRUD round trip with typed results and coded errors', async () => {
  const { server: created } = await operator.createServer({ name: 'crud', id: 'vm-crud' });
  assert.equal((await operator.getServer('vm-crud')).name, 'crud');
  assert.ok((await operator.listServers()).some((s) => s.id === created.id));
  const config = await operator.createConfig({ name: 'c', group: 'script', config: 'true' });
  assert.equal((await operator.getConfig(config.id)).group, 'script');
  assert.ok((await operator.listConfigs({ limit: 10 })).some((c) => c.id === config.id));
  await operator.deleteConfig(config.id);
  await operator.deleteServer('vm-crud');
  const error = await operator.getServer('vm-crud').catch((e: unknown) => e);
  assert.ok(error instanceof HearthApiError);
  assert.equal(error.status, 404);
  assert.equal(error.code, 'ERR_SERVER_NOT_FOUND');
});

test('guest metadata: ETag, 304 when unchanged, long-poll answered by a new deployment', async () => {
  const { agent, serverId } = await deployOne('meta');
  const first = await agent.getMetadata();
  assert.equal(first.modified, true);
  assert.ok(first.modified && first.document.deployments.length === 1);
  const unchanged = await agent.getMetadata({ etag: first.etag, wait: 0 });
  assert.equal(unchanged.modified, false);

  const waiting = agent.getMetadata({ etag: first.etag, wait: 20 });
  const config = await operator.createConfig({ name: 'second', group: 'script', config: 'true' });
  await operator.createDeployment({ config_id: config.id, server_id: serverId });
  const changed = await waiting;
  assert.ok(changed.modified && changed.document.deployments.length === 2);
  assert.notEqual(changed.etag, first.etag);
});

test('heartbeat, signal with an idempotency key (applied once), waitDeployment, timeline and metadata', async () => {
  const { agent, deploymentId, serverId } = await deployOne('signal');
  const beat = await agent.heartbeat(deploymentId, { message: 'working', progress: 10 });
  assert.equal(beat.deployment_id, deploymentId);

  const waiting = operator.waitDeployment(deploymentId, 20);
  const body = { deploy_stdout: 'ok', deploy_stderr: '', deploy_status_code: 0, answer: '42' };
  const ack = await agent.signal(deploymentId, body, { idempotencyKey: 'k1' });
  assert.deepEqual([ack.status, ack.duplicate], ['COMPLETE', false]);
  const again = await agent.signal(deploymentId, body, { idempotencyKey: 'k1' });
  assert.equal(again.duplicate, true);

  const done = await waiting;
  assert.equal(done.status, 'COMPLETE');
  assert.equal(done.output_values?.answer, '42');
  const types = (await operator.getTimeline(deploymentId)).map((e) => e.type);
  assert.ok(types.includes('deployment.heartbeat') && types.includes('deployment.completed'), types.join());
  assert.equal((await operator.getServerMetadata(serverId)).length, 1);
  assert.ok((await operator.listDeployments({ serverId })).every((d) => d.server_id === serverId));
});

test('events: a page with a cursor, and the live stream from that cursor', async () => {
  const page = await operator.listEvents({ limit: 1000 });
  assert.ok(page.events.length > 0);
  const controller = new AbortController();
  const seen: string[] = [];
  const streaming = (async () => {
    for await (const event of operator.streamEvents({ after: page.next_cursor, signal: controller.signal })) {
      seen.push(`${event.type} ${event.resource_id}`);
      if (event.resource_id === 'vm-streamed') controller.abort();
    }
  })();
  await operator.createServer({ name: 'streamed', id: 'vm-streamed' });
  await streaming;
  assert.deepEqual(seen, ['server.created vm-streamed']);
});
