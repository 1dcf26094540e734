// A member hearth made (member_bootstrap) that the provisioner removed kept its server record and a
// live credential for ever: the POST .../members {remove} only dropped the membership row, so the VM
// the provisioner said was gone could still read its metadata, signal, heartbeat and call the CFN API.
// Now its record is deleted with the removal (as a server delete: credential revoked at once, its
// deployments failed or kept as history), while a member the provisioner registered keeps its own.
// End to end over real HTTP on 127.0.0.1: a scale-down's remove_candidates reach a receiver, which
// removes them; on the suite's store (SQLite, or PostgreSQL in its pass).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { ActuatorWebhook, ScalingGroup } from '@hearth/protocol';
import { signV2 } from '@hearth/protocol/signing';
import { ADMIN, createConfig, testApp } from '../test-support.ts';

/** The app's public URL (testApp): what signatures cover, sent as Host to the app's real port. */
const HOST = '127.0.0.1:9';
const GROUP = '/v1/default/stacks/web/scaling_groups/g';

interface Reply {
  status: number;
  body: string;
  json<T>(): T;
}

function send(app: FastifyInstance, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const port = (app.server.address() as AddressInfo).port;
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: {
          host: HOST,
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }),
          ...headers,
        },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, body: text, json: <T>() => JSON.parse(text) as T });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function ok(reply: Promise<Reply>, status: number): Promise<Reply> {
  const got = await reply;
  assert.equal(got.status, status, got.body);
  return got;
}

/** An actuator on 127.0.0.1 that answers 200 and keeps every webhook. */
async function receiver(): Promise<{ url: string; hooks: ActuatorWebhook[]; server: Server }> {
  const hooks: ActuatorWebhook[] = [];
  const server = createServer((request, response) => {
    let raw = '';
    request.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    request.on('end', () => {
      hooks.push(JSON.parse(raw) as ActuatorWebhook);
      response.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, hooks, server };
}

/** Waits (at most 10 s) for the `count`th webhook. */
async function webhook(hooks: ActuatorWebhook[], count: number): Promise<ActuatorWebhook> {
  for (let i = 0; i < 500 && hooks.length < count; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(hooks.length, count, 'webhooks received');
  return hooks[count - 1]!;
}

/** A member as its VM holds it: the credential the webhook carried, its name (its resource), one IN_PROGRESS deployment. */
interface Member {
  id: string;
  name: string;
  accessKeyId: string;
  secret: string;
  bearer: Record<string, string>;
  deployment: string;
}

/** A DescribeStackResource GET of the member's own resource, signed (v2) with its EC2 keys, as cfn-get-metadata sends it. */
function describePath(member: Member): string {
  const params: Record<string, string> = {
    Action: 'DescribeStackResource',
    StackName: 'web',
    LogicalResourceId: member.name,
    AWSAccessKeyId: member.accessKeyId,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  };
  params.Signature = signV2(member.secret, 'sha256', 'GET', HOST, '/v1/', params);
  return `/v1/?${new URLSearchParams(params).toString()}`;
}

/** Every surface an agent credential opens, with the status each gives the member now. */
async function surfaces(app: FastifyInstance, member: Member, signal: boolean): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {
    metadata: (await send(app, 'GET', '/v1/guest/metadata', undefined, member.bearer)).status,
    heartbeat: (await send(app, 'POST', `/v1/guest/deployments/${member.deployment}/heartbeat`, {}, member.bearer)).status,
    cfn: (await send(app, 'GET', describePath(member))).status,
  };
  if (signal) {
    const reply = await send(app, 'POST', `/v1/guest/deployments/${member.deployment}/signal`, { deploy_status_code: 0 }, member.bearer);
    statuses.signal = reply.status;
  }
  return statuses;
}

async function deploy(app: FastifyInstance, config: string, serverId: string): Promise<string> {
  const reply = await ok(
    send(
      app,
      'POST',
      '/v1/default/software_deployments',
      { config_id: config, server_id: serverId, signal_transport: 'HEARTH_SIGNAL' },
      ADMIN,
    ),
    200,
  );
  return reply.json<{ software_deployment: { id: string } }>().software_deployment.id;
}

test('members hearth made that the provisioner removes are deleted with their credentials; its own members keep their records', async () => {
  const { app, done } = await testApp();
  const actuator = await receiver();
  try {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const config = await createConfig(app);
    await ok(send(app, 'POST', '/v1/default/stacks', { stack_name: 'web' }, ADMIN), 201);
    await ok(
      send(
        app,
        'POST',
        '/v1/default/stacks/web/scaling_groups',
        {
          name: 'g',
          min_size: 0,
          max_size: 9,
          desired_capacity: 3,
          actuator: { url: actuator.url, secret: 'actuator-secret-0123456789' },
          member_bootstrap: {},
        },
        ADMIN,
      ),
      201,
    );
    const first = await webhook(actuator.hooks, 1);
    assert.equal(first.new_members.length, 3);
    const members = new Map<string, Member>();
    for (const made of first.new_members) {
      const credential = made.credential!;
      members.set(made.server_id, {
        id: made.server_id,
        name: made.name,
        accessKeyId: credential.access_key_id,
        secret: credential.secret_access_key,
        bearer: { authorization: `Bearer ${credential.token}` },
        deployment: await deploy(app, config, made.server_id),
      });
    }
    // A VM the provisioner registered itself and added: bootstrap false, its record its own.
    const own = await ok(send(app, 'POST', '/v1/default/servers', { name: 'own' }, ADMIN), 201);
    const ownBody = own.json<{ server: { id: string }; credential: { token: string } }>();
    const ownBearer = { authorization: `Bearer ${ownBody.credential.token}` };
    await ok(send(app, 'POST', `${GROUP}/members`, { add: [ownBody.server.id] }, ADMIN), 200);

    for (const member of members.values())
      assert.deepEqual(await surfaces(app, member, false), { metadata: 200, heartbeat: 200, cfn: 200 }, `${member.id} before`);

    // A scale-down: the actuator is told which members to remove (the oldest: hearth's), and removes them.
    await ok(send(app, 'PATCH', GROUP, { desired_capacity: 2 }, ADMIN), 200);
    const down = await webhook(actuator.hooks, 2);
    assert.equal(down.remove_candidates.length, 2, JSON.stringify(down));
    const removed = down.remove_candidates.map((id) => members.get(id)!);
    assert.ok(removed.every(Boolean), 'the candidates are members hearth made');
    const kept = [...members.values()].find((m) => !down.remove_candidates.includes(m.id))!;
    const changed = await ok(send(app, 'POST', `${GROUP}/members`, { remove: [...down.remove_candidates, ownBody.server.id] }, ADMIN), 200);
    const group = changed.json<{ scaling_group: ScalingGroup }>().scaling_group;
    assert.deepEqual(
      group.members.map((m) => m.server_id),
      [kept.id],
    );

    for (const member of removed) {
      assert.deepEqual(await surfaces(app, member, true), { metadata: 401, heartbeat: 401, cfn: 403, signal: 401 }, `${member.id} after`);
      await ok(send(app, 'GET', `/v1/default/servers/${member.id}`, undefined, ADMIN), 404);
      const deployment = await ok(send(app, 'GET', `/v1/default/software_deployments/${member.deployment}`, undefined, ADMIN), 200);
      const shown = deployment.json<{ software_deployment: { status: string; status_reason: string } }>().software_deployment;
      assert.equal(shown.status, 'FAILED');
      assert.match(shown.status_reason, /was deleted before it signalled a result/);
    }
    // The member still in the group, and the provisioner's own server (removed, but not hearth's to delete), keep working.
    assert.deepEqual(await surfaces(app, kept, false), { metadata: 200, heartbeat: 200, cfn: 200 });
    await ok(send(app, 'GET', `/v1/default/servers/${ownBody.server.id}`, undefined, ADMIN), 200);
    await ok(send(app, 'GET', '/v1/guest/metadata', undefined, ownBearer), 200);

    const events = (await ok(send(app, 'GET', '/v1/default/events?limit=1000', undefined, ADMIN), 200)).json<{
      events: Array<{ type: string; resource_id: string; message: string; data: Record<string, unknown> }>;
    }>().events;
    for (const member of removed) {
      const deleted = events.find((e) => e.type === 'server.deleted' && e.resource_id === member.id);
      assert.match(deleted?.message ?? '', /removed from scaling group g by its provisioner/);
    }
    assert.ok(!events.some((e) => e.type === 'server.deleted' && e.resource_id === ownBody.server.id));
    const change = events.find((e) => e.type === 'scaling_group.members_changed' && (e.data.remove as string[]).length === 3);
    assert.deepEqual((change?.data.deleted_servers as string[]).sort(), down.remove_candidates.slice().sort());
    assert.match(change!.message, /2 record\(s\) hearth made deleted, their credentials revoked/);
  } finally {
    await new Promise((resolve) => actuator.server.close(resolve));
    await done();
  }
});
