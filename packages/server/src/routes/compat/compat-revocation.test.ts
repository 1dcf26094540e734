// What a VM holds on the Heat-compatible surfaces (a keystone token, a Swift temp URL, EC2 keys for
// DescribeStackResource, a wait condition's handle URLs and token) is checked when the request comes
// in, and the resource's delete can commit between that check and the answer. Each test lets the
// DELETE win deterministically, just after a read of the request: once the DELETE has answered 204,
// the request gets the revoked credential's answer on its surface, never the deleted server's
// document, and records nothing (no deployment fetch, no wait-condition signal).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, injectUrl, testApp } from '../../test-support.ts';

/** Runs `interloper` once, after the next call of `object[method]` has resolved and before its caller sees the result. */
function after<T extends object, K extends keyof T>(
  object: T,
  method: K,
  interloper: () => Promise<LightMyRequestResponse>,
): { reply: () => LightMyRequestResponse } {
  const original = object[method] as (...args: unknown[]) => Promise<unknown>;
  let reply: LightMyRequestResponse | undefined;
  (object[method] as unknown) = async (...args: unknown[]) => {
    delete object[method];
    const result = await original.apply(object, args);
    reply = await interloper();
    return result;
  };
  return {
    reply: () => {
      assert.ok(reply, 'the interloper did not run');
      return reply;
    },
  };
}

/** A DescribeStackResource GET signed as os-collect-config's cfn collector signs it (EC2 signature v2). */
function signedDescribe(base: string, ak: string, secret: string, stackName: string, resource: string): string {
  const url = new URL(base);
  const params: Record<string, string> = {
    Action: 'DescribeStackResource',
    StackName: stackName,
    LogicalResourceId: resource,
    AWSAccessKeyId: ak,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  };
  const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const query = Object.keys(params)
    .sort()
    .map((k) => `${enc(k)}=${enc(params[k]!)}`)
    .join('&');
  const signature = createHmac('sha256', secret).update(`GET\n${url.host}\n${url.pathname}\n${query}`).digest('base64');
  return `${base}?${query}&Signature=${enc(signature)}`;
}

async function keystoneToken(app: FastifyInstance, userId: string, password: string): Promise<string> {
  const login = await app.inject({
    method: 'POST',
    url: '/v3/auth/tokens',
    payload: { auth: { identity: { methods: ['password'], password: { user: { id: userId, password } } } } },
  });
  assert.equal(login.statusCode, 201, login.body);
  return String(login.headers['x-subject-token']);
}

/** A metadata GET of a server with `transport`, as its collector sends it. */
function metadataGet(app: FastifyInstance, transport: string, created: { os_collect_config: Record<string, Record<string, string>> }) {
  const settings = created.os_collect_config;
  if (transport === 'POLL_TEMP_URL') return () => injectUrl(app, 'GET', settings.request!.metadata_url!);
  if (transport === 'POLL_SERVER_CFN') {
    const cfn = settings.cfn!;
    return () =>
      injectUrl(app, 'GET', signedDescribe(cfn.metadata_url!, cfn.access_key_id!, cfn.secret_access_key!, cfn.stack_name!, 'server'));
  }
  const heat = settings.heat!;
  return async () => {
    const token = await keystoneToken(app, heat.user_id!, heat.password!);
    return app.inject({
      url: `/v1/${heat.project_id}/stacks/${heat.stack_id}/resources/server/metadata`,
      headers: { 'x-auth-token': token },
    });
  };
}

const REVOKED = {
  POLL_SERVER_HEAT: { status: 401, marker: /"code":"ERR_AUTH_INVALID"/ },
  POLL_TEMP_URL: { status: 403, marker: /"code":"ERR_SIGNED_URL_INVALID"/ },
  POLL_SERVER_CFN: { status: 403, marker: /<Code>InvalidClientTokenId<\/Code>/ },
} as const;

for (const transport of ['POLL_SERVER_HEAT', 'POLL_TEMP_URL', 'POLL_SERVER_CFN'] as const) {
  test(`${transport}: a server deleted while its document is read gets the revoked answer, not the document, and no fetch is recorded`, async () => {
    const { app, done } = await testApp({ background: false });
    try {
      const reply = await app.inject({
        method: 'POST',
        url: '/v1/default/servers',
        headers: ADMIN,
        payload: { name: 'vm', software_config_transport: transport },
      });
      assert.equal(reply.statusCode, 201, reply.body);
      const created = reply.json<{ server: { id: string }; os_collect_config: Record<string, Record<string, string>> }>();
      const deploymentId = await createDeployment(app, await createConfig(app), created.server.id, {
        input_values: { db_password: 'only-for-this-vm' },
      });
      const get = metadataGet(app, transport, created);
      const deleted = after(app.services.metadata, 'snapshot', () =>
        app.inject({ method: 'DELETE', url: `/v1/default/servers/${created.server.id}`, headers: ADMIN }),
      );
      const raced = await get();
      assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
      assert.equal(raced.statusCode, REVOKED[transport].status, raced.body);
      assert.match(raced.body, REVOKED[transport].marker);
      assert.doesNotMatch(raced.body, /only-for-this-vm/);
      assert.equal(raced.headers.etag, undefined, 'no validator for a revoked credential');

      // Writes are queued in order: once this one has committed, a fetch recorded by the GET would have too.
      await createConfig(app);
      const row = await app.services.store.reader
        .selectFrom('software_deployments')
        .select('fetched_at')
        .where('id', '=', deploymentId)
        .executeTakeFirstOrThrow();
      assert.equal(row.fetched_at, null, 'the refused GET recorded no fetch');
      const timeline = await app.inject({ url: `/v1/default/software_deployments/${deploymentId}/timeline`, headers: ADMIN });
      const types = timeline.json<{ timeline: Array<{ type: string }> }>().timeline.map((e) => e.type);
      assert.ok(!types.includes('deployment.fetched'), types.join());
    } finally {
      await done();
    }
  });
}

/** Stack `web` with wait condition `name` (count 2, so one signal leaves it IN_PROGRESS); returns its handle. */
async function waitCondition(app: FastifyInstance, name: string) {
  const created = await app.inject({
    method: 'POST',
    url: '/v1/default/stacks/web/wait_conditions',
    headers: ADMIN,
    payload: { name, count: 2, timeout: 600 },
  });
  assert.equal(created.statusCode, 201, created.body);
  return created.json<{ wait_condition: { handle: { cfn_url: string; signal_url: string; endpoint: string; token: string } } }>()
    .wait_condition.handle;
}

test("a wait condition deleted after its handle's credential was checked: each handle form gets the revoked answer and nothing is written", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    const json = { 'content-type': 'application/json' };
    const forms = [
      {
        name: 'cfn-url',
        send: (h: Awaited<ReturnType<typeof waitCondition>>) =>
          injectUrl(app, 'PUT', h.cfn_url, { Status: 'SUCCESS', UniqueId: '1', Data: 'up', Reason: 'ok' }, json),
        status: 403,
        marker: /<Code>InvalidClientTokenId<\/Code>/,
      },
      {
        name: 'signal-url',
        send: (h: Awaited<ReturnType<typeof waitCondition>>) => injectUrl(app, 'POST', h.signal_url, { status: 'SUCCESS' }, json),
        status: 403,
        marker: /<Code>InvalidClientTokenId<\/Code>/,
      },
      {
        name: 'token',
        send: (h: Awaited<ReturnType<typeof waitCondition>>) =>
          injectUrl(app, 'POST', h.endpoint, { status: 'SUCCESS' }, { ...json, 'x-auth-token': h.token }),
        status: 401,
        marker: /"code":"ERR_AUTH_INVALID"/,
      },
    ];
    for (const form of forms) {
      const handle = await waitCondition(app, form.name);
      const deleted = after(app.services.guestCredentials, 'lookup', () =>
        app.inject({ method: 'DELETE', url: `/v1/default/stacks/web/wait_conditions/${form.name}`, headers: ADMIN }),
      );
      const raced = await form.send(handle);
      assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
      assert.equal(raced.statusCode, form.status, `${form.name}: ${raced.body}`);
      assert.match(raced.body, form.marker, form.name);
      assert.doesNotMatch(raced.body, /ERR_WAIT_CONDITION_NOT_FOUND/, form.name);
    }
    const signals = await app.services.store.reader.selectFrom('wait_condition_signals').select('signal_id').execute();
    assert.deepEqual(signals, [], 'no signal was stored');
    const events = await app.services.store.reader
      .selectFrom('events')
      .select('type')
      .where('type', '=', 'wait_condition.signal')
      .execute();
    assert.deepEqual(events, [], 'no signal event was written');
  } finally {
    await done();
  }
});

test("a wait condition deleted while its token reads the handle's metadata: 401, not the metadata", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    const handle = await waitCondition(app, 'ready');
    const signalled = await injectUrl(
      app,
      'PUT',
      handle.cfn_url,
      { Status: 'SUCCESS', UniqueId: '1', Data: 'handle-data-7', Reason: 'ok' },
      { 'content-type': 'application/json' },
    );
    assert.equal(signalled.statusCode, 200, signalled.body);
    const metadataUrl = handle.endpoint.replace(/\/signal$/, '/metadata');
    const before = await injectUrl(app, 'GET', metadataUrl, undefined, { 'x-auth-token': handle.token });
    assert.match(before.body, /handle-data-7/);
    const deleted = after(app.services.waitConditions, 'handleMetadata', () =>
      app.inject({ method: 'DELETE', url: '/v1/default/stacks/web/wait_conditions/ready', headers: ADMIN }),
    );
    const raced = await injectUrl(app, 'GET', metadataUrl, undefined, { 'x-auth-token': handle.token });
    assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
    assert.equal(raced.statusCode, 401, raced.body);
    assert.equal(errorCode(raced), 'ERR_AUTH_INVALID');
    assert.doesNotMatch(raced.body, /handle-data-7/);
  } finally {
    await done();
  }
});

test('a deployment deleted after its signal credential was checked: each Heat transport gets the revoked answer and nothing is written', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    const registered = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: { name: 'vm' } });
    const server = registered.json<{ server: { id: string }; credential: { token: string } }>();
    const config = await createConfig(app);
    const json = { 'content-type': 'application/json' };
    const transports = [
      { transport: 'HEAT_SIGNAL', status: 401, marker: /"code":"ERR_AUTH_INVALID"/ },
      { transport: 'CFN_SIGNAL', status: 403, marker: /<Code>InvalidClientTokenId<\/Code>/ },
      { transport: 'TEMP_URL_SIGNAL', status: 403, marker: /"code":"ERR_SIGNED_URL_INVALID"/ },
    ];
    for (const { transport, status, marker } of transports) {
      const id = await createDeployment(app, config, server.server.id, { signal_transport: transport, name: transport });
      const document = await app.inject({ url: '/v1/guest/metadata', headers: { authorization: `Bearer ${server.credential.token}` } });
      const listed = document.json<{ deployments: Array<{ inputs: Array<{ name: string; value: string }> }> }>().deployments;
      const entry = listed.find((d) => d.inputs.some((i) => i.name === 'deploy_stack_id' && i.value === `deployments/${id}`));
      assert.ok(entry, `${transport}: the deployment is in the document`);
      const inputs = Object.fromEntries(entry.inputs.map((i) => [i.name, i.value]));
      let send: () => Promise<LightMyRequestResponse>;
      if (transport === 'HEAT_SIGNAL') {
        const token = await keystoneToken(app, inputs.deploy_user_id!, inputs.deploy_password!);
        const path = `/v1/${inputs.deploy_project_id}/stacks/${inputs.deploy_stack_id}/resources/${inputs.deploy_resource_name}/signal`;
        send = () =>
          app.inject({ method: 'POST', url: path, headers: { ...json, 'x-auth-token': token }, payload: { deploy_status_code: 0 } });
      } else {
        send = () => injectUrl(app, transport === 'CFN_SIGNAL' ? 'POST' : 'PUT', inputs.deploy_signal_id!, { deploy_status_code: 0 }, json);
      }
      const deleted = after(app.services.guestCredentials, 'lookup', () =>
        app.inject({ method: 'DELETE', url: `/v1/default/software_deployments/${id}`, headers: ADMIN }),
      );
      const raced = await send();
      assert.equal(deleted.reply().statusCode, 204, deleted.reply().body);
      assert.equal(raced.statusCode, status, `${transport}: ${raced.body}`);
      assert.match(raced.body, marker, transport);
      assert.doesNotMatch(raced.body, /ERR_DEPLOYMENT_NOT_FOUND/, transport);
      const events = await app.services.store.reader
        .selectFrom('events')
        .select('type')
        .where('resource_id', '=', id)
        .orderBy('id')
        .execute();
      assert.equal(
        events.at(-1)?.type,
        'deployment.deleted',
        `${transport}: nothing after the delete (${events.map((e) => e.type).join()})`,
      );
    }
  } finally {
    await done();
  }
});
