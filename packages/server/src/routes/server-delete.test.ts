// Deleting a server ends what was only ever handed to that VM: its deployments' own credentials
// (the CFN_SIGNAL pre-signed URL, the HEAT_SIGNAL keystone user and its tokens, the TEMP_URL_SIGNAL
// object) are refused once the DELETE has answered, and its IN_PROGRESS deployments fail at once
// with a reason, instead of waiting an hour for a VM that no longer exists. Over real HTTP on
// 127.0.0.1, on the suite's store (SQLite, or PostgreSQL in its pass, where a second replica on
// the same database is checked too).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.ts';
import { ADMIN, TEST_DIALECT, createConfig, testApp, testStore } from '../test-support.ts';

const HANDED_OUT_HOST = '127.0.0.1:9';
const SIGNALLED = ['CFN_SIGNAL', 'HEAT_SIGNAL', 'TEMP_URL_SIGNAL', 'HEARTH_SIGNAL'] as const;
type Transport = (typeof SIGNALLED)[number];

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  json<T>(): T;
}

/**
 * Sends a request to the app listening on 127.0.0.1. A URL the server handed out (its public URL is
 * 127.0.0.1:9, where nothing listens) goes to the app's real port with the handed-out Host header,
 * which its signatures cover.
 */
function send(app: FastifyInstance, method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const port = (app.server.address() as AddressInfo).port;
  const target = new URL(url, `http://${HANDED_OUT_HOST}`);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path: target.pathname + target.search,
        headers: {
          host: target.host,
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
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: <T>() => JSON.parse(text) as T });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${url} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

async function ok(reply: Promise<Reply>, status: number): Promise<Reply> {
  const got = await reply;
  assert.equal(got.status, status, got.body);
  return got;
}

async function listen(app: FastifyInstance): Promise<void> {
  await app.listen({ host: '127.0.0.1', port: 0 });
}

interface Vm {
  id: string;
  /** Its agent's credential header. */
  agent: Record<string, string>;
  /** Deployment id by transport (all IN_PROGRESS), and one more that is COMPLETE. */
  deployments: Record<Transport, string>;
  complete: string;
  /** Derived inputs by deployment id. */
  inputs: Map<string, Record<string, string>>;
}

/** A server with one IN_PROGRESS deployment per signalled transport and a COMPLETE CFN_SIGNAL one. */
async function vm(app: FastifyInstance, config: string, body: Record<string, unknown> = { name: 'vm' }): Promise<Vm> {
  const created = await ok(send(app, 'POST', '/v1/default/servers', body, ADMIN), 201);
  const { server, credential } = created.json<{ server: { id: string }; credential: { token: string } }>();
  const id = server.id;
  const agent = { authorization: `Bearer ${credential.token}` };
  const deploy = async (transport: Transport, name: string) => {
    const reply = await ok(
      send(app, 'POST', '/v1/default/software_deployments', { config_id: config, server_id: id, signal_transport: transport, name }, ADMIN),
      200,
    );
    return reply.json<{ software_deployment: { id: string } }>().software_deployment.id;
  };
  const deployments = {} as Record<Transport, string>;
  for (const transport of SIGNALLED) deployments[transport] = await deploy(transport, transport);
  const complete = await deploy('CFN_SIGNAL', 'done');
  const inputs = await derivedInputs(app, id);
  await ok(send(app, 'POST', inputs.get(complete)!.deploy_signal_id!, { deploy_status_code: 0, result: 'ok' }), 200);
  return { id, agent, deployments, complete, inputs };
}

/** The derived inputs of a server's deployments, by deployment id (what its agent is handed). */
async function derivedInputs(app: FastifyInstance, serverId: string): Promise<Map<string, Record<string, string>>> {
  const reply = await ok(send(app, 'GET', `/v1/default/software_deployments/metadata/${serverId}`, undefined, ADMIN), 200);
  const derived = reply.json<{ metadata: Array<{ inputs: Array<{ name: string; value: string }> }> }>().metadata;
  const all = derived.map((d) => Object.fromEntries(d.inputs.map((i) => [i.name, i.value])));
  // Outside a stack a deployment is resource `deployment` of its pseudo-stack `deployments/{its id}`.
  return new Map(all.map((inputs) => [inputs.deploy_stack_id!.split('/')[1]!, inputs]));
}

/** A keystone token for a HEAT_SIGNAL deployment's user (or the refusal). */
function keystone(app: FastifyInstance, inputs: Record<string, string>): Promise<Reply> {
  const auth = { identity: { methods: ['password'], password: { user: { id: inputs.deploy_user_id, password: inputs.deploy_password } } } };
  return send(app, 'POST', '/v3/auth/tokens', { auth });
}

function heatSignalPath(inputs: Record<string, string>): string {
  return `/v1/default/stacks/${inputs.deploy_stack_id}/resources/${inputs.deploy_resource_name}/signal`;
}

async function deployment(app: FastifyInstance, id: string): Promise<Record<string, unknown>> {
  const reply = await ok(send(app, 'GET', `/v1/default/software_deployments/${id}`, undefined, ADMIN), 200);
  return reply.json<{ software_deployment: Record<string, unknown> }>().software_deployment;
}

async function timeline(
  app: FastifyInstance,
  id: string,
): Promise<Array<{ type: string; message: string; data: Record<string, unknown> }>> {
  const reply = await ok(send(app, 'GET', `/v1/default/software_deployments/${id}/timeline`, undefined, ADMIN), 200);
  return reply.json<{ timeline: Array<{ type: string; message: string; data: Record<string, unknown> }> }>().timeline;
}

/** Every credential the deleted VM was handed for its deployments is refused, with the code a revoked one gets. */
async function assertAllRefused(app: FastifyInstance, server: Vm, heatToken: string, where: string): Promise<void> {
  const body = { deploy_status_code: 0, result: 'after delete' };
  const cfn = server.inputs.get(server.deployments.CFN_SIGNAL)!;
  const heat = server.inputs.get(server.deployments.HEAT_SIGNAL)!;
  const swift = server.inputs.get(server.deployments.TEMP_URL_SIGNAL)!;
  const hearth = server.inputs.get(server.deployments.HEARTH_SIGNAL)!;
  const done = server.inputs.get(server.complete)!;
  const attempts: Array<[string, () => Promise<Reply>, number, string]> = [
    ['CFN_SIGNAL URL', () => send(app, 'POST', cfn.deploy_signal_id!, body), 403, 'ERR_SIGNED_URL_INVALID'],
    // Byte for byte the signal that completed it: once a 200 `duplicate`, now the URL is revoked.
    [
      'CFN_SIGNAL URL of the COMPLETE deployment, same signal again',
      () => send(app, 'POST', done.deploy_signal_id!, { deploy_status_code: 0, result: 'ok' }),
      403,
      'ERR_SIGNED_URL_INVALID',
    ],
    ['HEAT_SIGNAL keystone password', () => keystone(app, heat), 401, 'ERR_AUTH_INVALID'],
    [
      'HEAT_SIGNAL token issued before the delete',
      () => send(app, 'POST', heatSignalPath(heat), body, { 'x-auth-token': heatToken }),
      401,
      'ERR_AUTH_INVALID',
    ],
    ['TEMP_URL_SIGNAL object', () => send(app, 'PUT', swift.deploy_signal_id!, body), 403, 'ERR_SIGNED_URL_INVALID'],
    // Derived from the deployment and its action, it was once a 409 (and a 200 for a repeat): its server's delete revokes it too.
    ['HEARTH_SIGNAL URL', () => send(app, 'POST', hearth.deploy_signal_id!, body), 401, 'ERR_AUTH_INVALID'],
    [
      'HEARTH_SIGNAL URL, heartbeat',
      () => send(app, 'POST', hearth.deploy_signal_id!.replace('/signal?', '/heartbeat?'), {}),
      401,
      'ERR_AUTH_INVALID',
    ],
  ];
  for (const [name, attempt, status, code] of attempts) {
    const reply = await attempt();
    assert.equal(reply.status, status, `${where}: ${name}: ${reply.body}`);
    assert.ok(reply.body.includes(code), `${where}: ${name}: ${reply.body}`);
  }
}

/** The server's IN_PROGRESS deployments are FAILED for the delete (one event each); the COMPLETE one is untouched. */
async function assertFailedForDelete(app: FastifyInstance, server: Vm): Promise<void> {
  for (const [transport, id] of Object.entries(server.deployments)) {
    const shown = await deployment(app, id);
    assert.equal(shown.status, 'FAILED', `${transport}: ${JSON.stringify(shown)}`);
    assert.match(
      String(shown.status_reason),
      new RegExp(`^Its server ${server.id} \\(vm\\) was deleted before it signalled a result$`),
      transport,
    );
    assert.equal(shown.deadline, null, transport);
    const failed = (await timeline(app, id)).filter((e) => e.type === 'deployment.failed');
    assert.equal(failed.length, 1, `${transport}: one deployment.failed event`);
    assert.deepEqual(failed[0]!.data, { status: 'FAILED', cause: 'server_deleted' }, transport);
    assert.equal(failed[0]!.message, shown.status_reason, transport);
  }
  const complete = await deployment(app, server.complete);
  assert.equal(complete.status, 'COMPLETE');
  assert.equal((complete.output_values as { result?: string }).result, 'ok');
  const settled = (await timeline(app, server.complete)).filter((e) => e.type === 'deployment.failed' || e.type === 'deployment.completed');
  assert.deepEqual(
    settled.map((e) => e.type),
    ['deployment.completed'],
  );
}

test("deleting a server revokes its deployments' credentials on every guest surface and fails its IN_PROGRESS deployments at once", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await listen(app);
    const config = await createConfig(app);
    const server = await vm(app, config);
    const other = await vm(app, config, { name: 'other' });
    const heatInputs = server.inputs.get(server.deployments.HEAT_SIGNAL)!;
    const heatToken = String((await ok(keystone(app, heatInputs), 201)).headers['x-subject-token']);
    // `hearth deployment wait`: a waiter is waiting when the DELETE comes.
    const waiting = send(app, 'GET', `/v1/default/software_deployments/${server.deployments.HEARTH_SIGNAL}?wait=60`, undefined, ADMIN);
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await ok(send(app, 'DELETE', `/v1/default/servers/${server.id}`, undefined, ADMIN), 204);
    const waited = await ok(waiting, 200);
    assert.equal(waited.json<{ software_deployment: { status: string } }>().software_deployment.status, 'FAILED');
    assert.ok(Date.now() - started < 20_000, 'the waiter is answered when the server is deleted, not at the end of its wait');

    await assertFailedForDelete(app, server);
    await assertAllRefused(app, server, heatToken, 'same replica');
    // History stays with the operator: listed, shown, deleted.
    const listed = await ok(send(app, 'GET', `/v1/default/software_deployments?server_id=${server.id}`, undefined, ADMIN), 200);
    assert.equal(listed.json<{ software_deployments: unknown[] }>().software_deployments.length, 5);
    await ok(send(app, 'DELETE', `/v1/default/software_deployments/${server.complete}`, undefined, ADMIN), 204);

    // The other server's deployments and credentials are untouched.
    const cfn = other.inputs.get(other.deployments.CFN_SIGNAL)!;
    await ok(send(app, 'POST', cfn.deploy_signal_id!, { deploy_status_code: 0, result: 'fine' }), 200);
    assert.equal((await deployment(app, other.deployments.CFN_SIGNAL)).status, 'COMPLETE');
    assert.equal((await deployment(app, other.deployments.HEAT_SIGNAL)).status, 'IN_PROGRESS');
    await ok(keystone(app, other.inputs.get(other.deployments.HEAT_SIGNAL)!), 201);
  } finally {
    await done();
  }
});

/** The ids of the deployments in a server's document, as its agent reads it (by its pseudo-stack `deployments/{id}`). */
async function documentOf(app: FastifyInstance, agent: Record<string, string>): Promise<string[]> {
  const reply = await ok(send(app, 'GET', '/v1/guest/metadata', undefined, { ...agent, host: HANDED_OUT_HOST }), 200);
  const listed = reply.json<{ deployments: Array<{ inputs: Array<{ name: string; value: string }> }> }>().deployments;
  return listed.map((d) => d.inputs.find((i) => i.name === 'deploy_stack_id')!.value.split('/')[1]!).sort();
}

async function register(app: FastifyInstance, id: string): Promise<Record<string, string>> {
  const created = await ok(send(app, 'POST', '/v1/default/servers', { name: 'vm', id }, ADMIN), 201);
  return { authorization: `Bearer ${created.json<{ credential: { token: string } }>().credential.token}` };
}

async function deployTo(app: FastifyInstance, config: string, serverId: string, transport: string): Promise<string> {
  const body = { config_id: config, server_id: serverId, signal_transport: transport, name: transport };
  const reply = await ok(send(app, 'POST', '/v1/default/software_deployments', body, ADMIN), 200);
  return reply.json<{ software_deployment: { id: string } }>().software_deployment.id;
}

test("a server registered again under a deleted server's id is a fresh VM: none of the old deployments are in its document", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await listen(app);
    const config = await createConfig(app);
    const id = '2b0c6f7e-3f59-4a43-9d3e-2f1c1a6a9c11';
    // As in Heat, deployments may come before the server registers: those reach it.
    const early = await deployTo(app, config, id, 'NO_SIGNAL');
    const old = await vm(app, config, { name: 'vm', id });
    assert.ok(old.inputs.has(early), 'a deployment made before the first registration is in its document');
    const oldToken = String((await ok(keystone(app, old.inputs.get(old.deployments.HEAT_SIGNAL)!), 201)).headers['x-subject-token']);
    const oldIds = [early, old.complete, ...Object.values(old.deployments)];
    await ok(send(app, 'DELETE', `/v1/default/servers/${id}`, undefined, ADMIN), 204);
    const deleted = await ok(send(app, 'GET', `/v1/default/events?resource_id=${id}&type=server.deleted`, undefined, ADMIN), 200);
    const deletedData = deleted.json<{ events: Array<{ data: Record<string, unknown> }> }>().events[0]!.data;
    assert.deepEqual(deletedData, { deployments_failed: 4, deployments_detached: 6 });
    // Made for the id after the delete (for the VM that will register under it): this one is the new VM's.
    const pending = await deployTo(app, config, id, 'CFN_SIGNAL');

    const agent = await register(app, id);
    assert.deepEqual(await documentOf(app, agent), [pending], 'only what was made for the id since the delete');
    assert.deepEqual([...(await derivedInputs(app, id)).keys()], [pending], "the operator's view of its metadata too");
    await assertAllRefused(app, old, oldToken, 'registered again');
    // The old deployments stay with the operator as history: listed, shown, their timelines, deleted.
    const listed = await ok(send(app, 'GET', `/v1/default/software_deployments?server_id=${id}`, undefined, ADMIN), 200);
    const listedIds = listed.json<{ software_deployments: Array<{ id: string }> }>().software_deployments.map((d) => d.id);
    assert.deepEqual(listedIds.sort(), [...oldIds, pending].sort());
    assert.equal((await deployment(app, old.complete)).status, 'COMPLETE');
    assert.equal((await deployment(app, early)).status, 'COMPLETE');
    assert.ok((await timeline(app, old.complete)).some((e) => e.type === 'deployment.completed'));
    await ok(send(app, 'DELETE', `/v1/default/software_deployments/${old.complete}`, undefined, ADMIN), 204);

    // The operator runs old ones again: each new action is the new VM's, with a credential of its own.
    const cfnId = old.deployments.CFN_SIGNAL;
    await ok(send(app, 'PUT', `/v1/default/software_deployments/${cfnId}`, { action: 'UPDATE' }, ADMIN), 200);
    assert.deepEqual(await documentOf(app, agent), [cfnId, pending].sort(), 'a new action brings it back');
    const fresh = (await derivedInputs(app, id)).get(cfnId)!;
    assert.notEqual(fresh.deploy_signal_id, old.inputs.get(cfnId)!.deploy_signal_id);
    const refused = await send(app, 'POST', old.inputs.get(cfnId)!.deploy_signal_id!, { deploy_status_code: 0 });
    assert.equal(refused.status, 403, refused.body);
    await ok(send(app, 'POST', fresh.deploy_signal_id!, { deploy_status_code: 0, result: 'again' }), 200);
    assert.equal((await deployment(app, cfnId)).status, 'COMPLETE');
    for (const transport of ['HEAT_SIGNAL', 'HEARTH_SIGNAL'] as const) {
      const again = old.deployments[transport];
      await ok(send(app, 'PUT', `/v1/default/software_deployments/${again}`, { status: 'IN_PROGRESS' }, ADMIN), 200);
      assert.ok((await documentOf(app, agent)).includes(again), `${transport} set IN_PROGRESS is in the document again`);
    }
    const heatId = old.deployments.HEAT_SIGNAL;
    const heat = (await derivedInputs(app, id)).get(heatId)!;
    const token = String((await ok(keystone(app, heat), 201)).headers['x-subject-token']);
    await ok(send(app, 'POST', heatSignalPath(heat), { deploy_status_code: 0 }, { 'x-auth-token': token }), 200);
    assert.equal((await deployment(app, heatId)).status, 'COMPLETE');
    assert.equal((await keystone(app, old.inputs.get(heatId)!)).status, 401, "the deleted VM's keystone user stays revoked");
    const hearthId = old.deployments.HEARTH_SIGNAL;
    const hearth = (await derivedInputs(app, id)).get(hearthId)!;
    // The same action, set IN_PROGRESS again: the deleted VM's URL for it must not come back to life.
    assert.notEqual(hearth.deploy_signal_id, old.inputs.get(hearthId)!.deploy_signal_id);
    const stale = await send(app, 'POST', old.inputs.get(hearthId)!.deploy_signal_id!, { deploy_status_code: 0, result: 'old vm' });
    assert.equal(stale.status, 401, stale.body);
    assert.match(stale.body, /ERR_AUTH_INVALID/);
    assert.equal((await deployment(app, hearthId)).status, 'IN_PROGRESS', "the deleted VM's URL changed nothing");
    await ok(send(app, 'POST', hearth.deploy_signal_id!, { deploy_status_code: 0 }), 200);
    assert.equal((await deployment(app, hearthId)).status, 'COMPLETE');
    // Neither run again nor set IN_PROGRESS: still in no document.
    const document = await documentOf(app, agent);
    for (const stale of [early, old.deployments.TEMP_URL_SIGNAL]) assert.ok(!document.includes(stale), stale);
    // Deleted again: the URL the new VM was handed (bound to the key it was attached with) is revoked in turn.
    await ok(send(app, 'DELETE', `/v1/default/servers/${id}`, undefined, ADMIN), 204);
    const revoked = await send(app, 'POST', hearth.deploy_signal_id!, { deploy_status_code: 0 });
    assert.equal(revoked.status, 401, revoked.body);
    await register(app, id);
    await ok(send(app, 'PUT', `/v1/default/software_deployments/${hearthId}`, { status: 'IN_PROGRESS' }, ADMIN), 200);
    for (const url of [old.inputs.get(hearthId)!.deploy_signal_id!, hearth.deploy_signal_id!]) {
      const refused = await send(app, 'POST', url, { deploy_status_code: 0 });
      assert.equal(refused.status, 401, refused.body);
    }
    const third = (await derivedInputs(app, id)).get(hearthId)!;
    await ok(send(app, 'POST', third.deploy_signal_id!, { deploy_status_code: 0, result: 'third vm' }), 200);
  } finally {
    await done();
  }
});

test('a HEARTH_SIGNAL URL names the key it is bound to: any other key, or one where none was bound, is a 401 that changes nothing', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await listen(app);
    const config = await createConfig(app);
    const server = await vm(app, config);
    const id = server.deployments.HEARTH_SIGNAL;
    const url = new URL(server.inputs.get(id)!.deploy_signal_id!);
    assert.equal(url.searchParams.get('key'), null, 'a deployment never detached is bound to no key');
    const token = url.searchParams.get('token')!;
    const action = url.searchParams.get('action')!;
    const base = `/v1/guest/deployments/${id}/signal`;
    const key = 'a'.repeat(32);
    for (const query of [
      `action=${action}&key=${key}&token=${token}`,
      `key=${key}&token=${token}`,
      `action=${action}&key=${key}&key=${key}&token=${token}`,
      `action=${action}&key=not-a-key&token=${token}`,
      `action=${action}&key=&token=${token}`,
    ]) {
      const refused = await send(app, 'POST', `${base}?${query}`, { deploy_status_code: 0 });
      assert.equal(refused.status, 401, `${query}: ${refused.body}`);
      assert.match(refused.body, /ERR_AUTH_INVALID/, query);
    }
    assert.equal((await deployment(app, id)).status, 'IN_PROGRESS');
    await ok(send(app, 'POST', `${base}?action=${action}&token=${token}`, { deploy_status_code: 0 }), 200);
  } finally {
    await done();
  }
});

/** Runs `interloper` once, just before the next write of `kind` is queued, so that it commits first. */
function before(app: FastifyInstance, kind: 'write' | 'writePrepared', interloper: () => Promise<Reply>): () => Reply {
  const store = app.services.store;
  const original = store[kind].bind(store) as (...args: unknown[]) => Promise<unknown>;
  let reply: Reply | undefined;
  (store[kind] as unknown) = async (...args: unknown[]) => {
    (store[kind] as unknown) = original;
    reply = await interloper();
    return original(...args);
  };
  return () => {
    assert.ok(reply, 'the interloper did not run');
    return reply;
  };
}

/**
 * How a deleted VM signals one of its deployments on each surface, and what a revoked credential gets
 * there: the CFN URL and the Swift object a 403, a keystone token a 401, a HEARTH_SIGNAL URL and the
 * agent's own credential (signal or heartbeat) the guest API's 401. `prepare` gets what the VM holds
 * (a keystone token) before the race begins.
 */
interface Signaller {
  name: string;
  transport: Transport;
  prepare(app: FastifyInstance, server: Vm): Promise<(body: Record<string, unknown>) => Promise<Reply>>;
  /** The store call its write goes through. */
  write: 'write' | 'writePrepared';
  refused: [number, string];
  /** The deployment settles (a heartbeat leaves it IN_PROGRESS). */
  settles: boolean;
}

const SIGNALLERS: Signaller[] = [
  {
    name: 'CFN_SIGNAL URL',
    transport: 'CFN_SIGNAL',
    prepare: async (app, server) => (body) => send(app, 'POST', server.inputs.get(server.deployments.CFN_SIGNAL)!.deploy_signal_id!, body),
    write: 'writePrepared',
    refused: [403, 'ERR_SIGNED_URL_INVALID'],
    settles: true,
  },
  {
    name: 'TEMP_URL_SIGNAL object',
    transport: 'TEMP_URL_SIGNAL',
    prepare: async (app, server) => (body) =>
      send(app, 'PUT', server.inputs.get(server.deployments.TEMP_URL_SIGNAL)!.deploy_signal_id!, body),
    write: 'writePrepared',
    refused: [403, 'ERR_SIGNED_URL_INVALID'],
    settles: true,
  },
  {
    name: 'HEAT_SIGNAL keystone token',
    transport: 'HEAT_SIGNAL',
    prepare: async (app, server) => {
      const heat = server.inputs.get(server.deployments.HEAT_SIGNAL)!;
      const token = String((await ok(keystone(app, heat), 201)).headers['x-subject-token']);
      return (body) => send(app, 'POST', heatSignalPath(heat), body, { 'x-auth-token': token });
    },
    write: 'writePrepared',
    refused: [401, 'ERR_AUTH_INVALID'],
    settles: true,
  },
  {
    name: 'HEARTH_SIGNAL URL',
    transport: 'HEARTH_SIGNAL',
    prepare: async (app, server) => (body) =>
      send(app, 'POST', server.inputs.get(server.deployments.HEARTH_SIGNAL)!.deploy_signal_id!, body),
    write: 'writePrepared',
    refused: [401, 'ERR_AUTH_INVALID'],
    settles: true,
  },
  {
    name: "the agent's own credential",
    transport: 'HEARTH_SIGNAL',
    prepare: async (app, server) => (body) =>
      send(app, 'POST', `/v1/guest/deployments/${server.deployments.HEARTH_SIGNAL}/signal`, body, server.agent),
    write: 'writePrepared',
    refused: [401, 'ERR_AUTH_INVALID'],
    settles: true,
  },
  {
    name: "the agent's heartbeat",
    transport: 'HEARTH_SIGNAL',
    prepare: async (app, server) => () =>
      send(app, 'POST', `/v1/guest/deployments/${server.deployments.HEARTH_SIGNAL}/heartbeat`, { progress: 50 }, server.agent),
    write: 'write',
    refused: [401, 'ERR_AUTH_INVALID'],
    settles: false,
  },
];

test("a signal racing the delete either commits first and stays, or gets the revoked credential's answer: never a 2xx that did not take effect, never a 409", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await listen(app);
    const config = await createConfig(app);
    for (const signaller of SIGNALLERS) {
      const { name, transport } = signaller;
      const [status, code] = signaller.refused;
      // The delete commits after the signal's credential was checked, before its write is queued.
      const late = await vm(app, config, { name: 'late' });
      const lateId = late.deployments[transport];
      const lateSignal = await signaller.prepare(app, late);
      const deleted = before(app, signaller.write, () => send(app, 'DELETE', `/v1/default/servers/${late.id}`, undefined, ADMIN));
      const refused = await lateSignal({ deploy_status_code: 0, result: 'late' });
      assert.equal(deleted().status, 204, deleted().body);
      assert.equal(refused.status, status, `${name}: ${refused.body}`);
      assert.ok(refused.body.includes(code), `${name}: ${refused.body}`);
      const lost = await deployment(app, lateId);
      assert.equal(lost.status, 'FAILED', name);
      assert.equal(lost.output_values, null, name);
      assert.deepEqual(
        (await timeline(app, lateId)).filter((e) => e.type === 'deployment.completed' || e.type === 'deployment.heartbeat').length,
        0,
        `${name}: the refused signal left no trace`,
      );

      // The signal commits first: its result stays, the delete fails nothing.
      const early = await vm(app, config, { name: 'early' });
      const earlyId = early.deployments[transport];
      const earlySignal = await signaller.prepare(app, early);
      const signalled = before(app, 'write', () => earlySignal({ deploy_status_code: 0, result: 'early' }));
      await ok(send(app, 'DELETE', `/v1/default/servers/${early.id}`, undefined, ADMIN), 204);
      assert.ok(signalled().status === 200 || signalled().status === 201, `${name}: ${signalled().body}`);
      const kept = await deployment(app, earlyId);
      if (signaller.settles) {
        assert.equal(kept.status, 'COMPLETE', name);
        assert.equal((kept.output_values as { result?: string }).result, 'early', name);
        assert.equal((await timeline(app, earlyId)).filter((e) => e.type === 'deployment.failed').length, 0, name);
      } else {
        assert.equal(kept.status, 'FAILED', name);
      }
      // ...and the credential is revoked now, for the very same signal too.
      const again = await earlySignal({ deploy_status_code: 0, result: 'early' });
      assert.equal(again.status, status, `${name}: ${again.body}`);
      assert.ok(again.body.includes(code), `${name}: ${again.body}`);
    }
  } finally {
    await done();
  }
});

test("on another replica (PostgreSQL), the deleted server's deployment credentials are refused at once, its waiters answered, and none of its deployments reach a server registered again under its id", async (t) => {
  if (TEST_DIALECT !== 'postgres') {
    t.skip('replicas share a PostgreSQL database');
    return;
  }
  const store = await testStore();
  const replicaDir = mkdtempSync(join(tmpdir(), 'hearth-replica-'));
  const options = {
    databaseUrl: store.databaseUrl,
    adminToken: 'admin-secret',
    secretKey: 'unit-test-secret-key-0123456789',
    publicUrl: 'http://127.0.0.1:9',
    restartGraceMs: 0,
  };
  let app: FastifyInstance | undefined;
  let replica: FastifyInstance | undefined;
  try {
    app = await buildApp({ ...options, dataDir: store.dataDir });
    replica = await buildApp({ ...options, dataDir: replicaDir });
    await listen(app);
    await listen(replica);
    const config = await createConfig(app);
    const server = await vm(app, config);
    const other = await vm(app, config, { name: 'other' });
    const heat = server.inputs.get(server.deployments.HEAT_SIGNAL)!;
    // The replica has used these credentials before the delete (anything it keeps of them is warm).
    const token = String((await ok(keystone(replica, heat), 201)).headers['x-subject-token']);
    const otherCfn = other.inputs.get(other.deployments.CFN_SIGNAL)!;
    await ok(send(replica, 'POST', otherCfn.deploy_signal_id!, { deploy_status_code: 0 }), 200);
    assert.equal((await documentOf(replica, server.agent)).length, 5, "the replica has the server's document in memory");
    const waiting = send(replica, 'GET', `/v1/default/software_deployments/${server.deployments.HEARTH_SIGNAL}?wait=60`, undefined, ADMIN);
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await ok(send(app, 'DELETE', `/v1/default/servers/${server.id}`, undefined, ADMIN), 204);
    await assertAllRefused(replica, server, token, 'other replica');
    await assertFailedForDelete(replica, server);
    const waited = await ok(waiting, 200);
    assert.equal(waited.json<{ software_deployment: { status: string } }>().software_deployment.status, 'FAILED');
    assert.ok(Date.now() - started < 20_000, "the replica's waiter is answered when the server is deleted");
    // Registered again under its id through the first replica: the other serves the fresh VM none of the old deployments.
    const again = await register(app, server.id);
    assert.deepEqual(await documentOf(replica, again), []);
  } finally {
    await replica?.close();
    await app?.close();
    rmSync(replicaDir, { recursive: true, force: true });
    await store.remove();
  }
});
