import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { signV2 } from '@hearth/protocol/signing';
import { ADMIN, createConfig, injectUrl, testApp } from '../test-support.ts';

// One VM's credential reaches only that VM: server A's agent, holding everything A is handed
// (Bearer credential, EC2 keys, keystone password and token, temp URLs, its deployments' signal
// URLs and credentials, a wait-condition handle), tries every guest-facing surface on server B's
// things. Each attempt is refused with the code its surface documents (the native guest API answers
// 404 as if B's deployment did not exist; the Heat, CFN and Swift surfaces 403) and nothing of B changes.

const HOST = '127.0.0.1:9';
const TRANSPORTS = ['HEARTH_SIGNAL', 'CFN_SIGNAL', 'HEAT_SIGNAL', 'TEMP_URL_SIGNAL'] as const;
type Transport = (typeof TRANSPORTS)[number];

interface Vm {
  id: string;
  accessKeyId: string;
  secret: string;
  token: string;
  metadataUrl: string;
  /** The derived inputs of each of its deployments, by signal transport. */
  inputs: Record<Transport, Record<string, string>>;
  deployments: Record<Transport, string>;
}

async function ok(reply: Promise<LightMyRequestResponse>, status: number): Promise<LightMyRequestResponse> {
  const got = await reply;
  assert.equal(got.statusCode, status, got.body);
  return got;
}

async function vm(app: FastifyInstance, name: string, config: string): Promise<Vm> {
  const created = await ok(
    app.inject({
      method: 'POST',
      url: '/v1/default/servers',
      headers: ADMIN,
      payload: { name, stack: 'web', software_config_transport: 'POLL_TEMP_URL' },
    }),
    201,
  );
  const body = created.json<{
    server: { id: string };
    credential: { access_key_id: string; secret_access_key: string; token: string };
    os_collect_config: { request: { metadata_url: string } };
  }>();
  const deployments = {} as Record<Transport, string>;
  for (const transport of TRANSPORTS) {
    const reply = await ok(
      app.inject({
        method: 'POST',
        url: '/v1/default/software_deployments',
        headers: ADMIN,
        payload: { config_id: config, server_id: body.server.id, signal_transport: transport, name: `${name}-${transport}` },
      }),
      200,
    );
    deployments[transport] = reply.json<{ software_deployment: { id: string } }>().software_deployment.id;
  }
  const metadata = await ok(app.inject({ url: `/v1/default/software_deployments/metadata/${body.server.id}`, headers: ADMIN }), 200);
  const derived = metadata.json<{ metadata: Array<{ name: string; inputs: Array<{ name: string; value: string }> }> }>().metadata;
  const inputs = Object.fromEntries(
    TRANSPORTS.map((transport) => {
      const deployment = derived.find((d) => d.name === `${name}-${transport}`);
      return [transport, Object.fromEntries((deployment?.inputs ?? []).map((input) => [input.name, input.value]))];
    }),
  ) as Vm['inputs'];
  return {
    id: body.server.id,
    accessKeyId: body.credential.access_key_id,
    secret: body.credential.secret_access_key,
    token: body.credential.token,
    metadataUrl: body.os_collect_config.request.metadata_url,
    inputs,
    deployments,
  };
}

/** A keystone token from hearth's shim for a user id and password. */
async function keystoneToken(app: FastifyInstance, userId: string, password: string): Promise<string> {
  const reply = await ok(
    app.inject({
      method: 'POST',
      url: '/v3/auth/tokens',
      payload: { auth: { identity: { methods: ['password'], password: { user: { id: userId, password } } } } },
    }),
    201,
  );
  return reply.headers['x-subject-token'] as string;
}

/** A DescribeStackResource GET signed (v2) with the given EC2 keys. */
function describeUrl(accessKeyId: string, secret: string, stackName: string, resource: string): string {
  const params: Record<string, string> = {
    Action: 'DescribeStackResource',
    StackName: stackName,
    LogicalResourceId: resource,
    AWSAccessKeyId: accessKeyId,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
  };
  params.Signature = signV2(secret, 'sha256', 'GET', HOST, '/v1/', params);
  return `/v1/?${new URLSearchParams(params).toString()}`;
}

/** `url`'s query (its signature) on `other`'s path. */
function signatureOnPath(url: string, other: string): string {
  return `${new URL(other).pathname}${new URL(url).search}`;
}

/** B's state as an operator sees it: deployments, its metadata document, the wait condition, the events. */
async function snapshot(app: FastifyInstance, b: Vm) {
  const deployments: Record<string, unknown> = {};
  for (const id of Object.values(b.deployments)) {
    const reply = await ok(app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN }), 200);
    const { status, status_reason, output_values, deadline, last_heartbeat_time } = reply.json<{
      software_deployment: Record<string, unknown>;
    }>().software_deployment;
    deployments[id] = { status, status_reason, output_values, deadline, last_heartbeat_time };
  }
  const metadata = await ok(app.inject({ url: `/v1/default/software_deployments/metadata/${b.id}`, headers: ADMIN }), 200);
  const condition = await ok(app.inject({ url: '/v1/default/stacks/web/wait_conditions/wb', headers: ADMIN }), 200);
  const events = await ok(app.inject({ url: '/v1/default/events', headers: ADMIN }), 200);
  const { status, received } = condition.json<{ wait_condition: { status: string; received: number } }>().wait_condition;
  return {
    deployments,
    metadata: metadata.body,
    waitCondition: { status, received },
    events: events.json<{ events: unknown[] }>().events.length,
  };
}

interface Attempt {
  name: string;
  send: () => Promise<LightMyRequestResponse>;
  status: number;
  code: string | RegExp;
}

test("server A's credentials, tokens and URLs reach none of server B's things, on any guest surface, and change nothing", async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await ok(app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } }), 201);
    await ok(app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'other' } }), 201);
    const config = await createConfig(app);
    const a = await vm(app, 'a', config);
    const b = await vm(app, 'b', config);
    const handles: Record<string, { cfn_url: string; signal_url: string; endpoint: string; token: string }> = {};
    for (const name of ['wa', 'wb']) {
      const created = await ok(
        app.inject({
          method: 'POST',
          url: '/v1/default/stacks/web/wait_conditions',
          headers: ADMIN,
          payload: { name, count: 1, timeout: 600 },
        }),
        201,
      );
      handles[name] = created.json<{ wait_condition: { handle: (typeof handles)[string] } }>().wait_condition.handle;
    }
    const wa = handles.wa!;
    const wb = handles.wb!;
    const stackId = new URL(wa.endpoint).pathname.split('/')[5]!;
    const aToken = await keystoneToken(app, a.accessKeyId, a.secret);
    const aHeat = a.inputs.HEAT_SIGNAL;
    const aDeploymentToken = await keystoneToken(app, aHeat.deploy_user_id!, aHeat.deploy_password!);
    const bearer = { authorization: `Bearer ${a.token}` };
    const json = { 'content-type': 'application/json' };
    const cfnBody = { Status: 'SUCCESS', Reason: 'forged', UniqueId: '1', Data: 'x' };
    const aCapability = new URL(a.inputs.HEARTH_SIGNAL.deploy_signal_id!);
    const bHearth = b.deployments.HEARTH_SIGNAL;
    const bCfnSignal = b.inputs.CFN_SIGNAL.deploy_signal_id!;
    const aCfnSignal = a.inputs.CFN_SIGNAL.deploy_signal_id!;
    const bHeatStack = b.inputs.HEAT_SIGNAL.deploy_stack_id!;
    const guest = (path: string, headers: Record<string, string>, method: 'GET' | 'POST' = 'POST') =>
      app.inject({ method, url: path, headers: { host: HOST, ...headers }, ...(method === 'POST' && { payload: {} }) });
    const heat = (path: string, token: string, method: 'GET' | 'POST' = 'POST') =>
      app.inject({ method, url: path, headers: { 'x-auth-token': token }, ...(method === 'POST' && { payload: {} }) });

    const before = await snapshot(app, b);
    const attempts: Attempt[] = [
      // The native guest API: another server's deployment is a 404, as a missing one is.
      ...['signal', 'heartbeat'].flatMap((what): Attempt[] => [
        {
          name: `guest ${what} of B's deployment`,
          send: () => guest(`/v1/guest/deployments/${bHearth}/${what}`, bearer),
          status: 404,
          code: 'ERR_DEPLOYMENT_NOT_FOUND',
        },
        {
          name: `guest ${what} of B's deployment, id upper-cased`,
          send: () => guest(`/v1/guest/deployments/${bHearth.toUpperCase()}/${what}`, bearer),
          status: 404,
          code: 'ERR_DEPLOYMENT_NOT_FOUND',
        },
      ]),
      {
        name: "guest signal of B's deployment through A's id and %2F..%2F",
        send: () => guest(`/v1/guest/deployments/${a.deployments.HEARTH_SIGNAL}%2F..%2F${bHearth}/signal`, bearer),
        status: 400,
        code: 'ERR_REQUEST_INVALID',
      },
      {
        name: "guest signal of B's deployment with a trailing dot",
        send: () => guest(`/v1/guest/deployments/${bHearth}./signal`, bearer),
        status: 400,
        code: 'ERR_REQUEST_INVALID',
      },
      {
        name: "A's signal URL token (and action) on B's deployment",
        send: () => guest(`/v1/guest/deployments/${bHearth}/signal${aCapability.search}`, {}),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      {
        name: "A's signal URL token on B's deployment, with B's id as action",
        send: () => guest(`/v1/guest/deployments/${bHearth}/signal?token=${aCapability.searchParams.get('token')}`, bearer),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      {
        name: "native metadata of B's server with A's credential",
        send: () => guest(`/v1/default/software_deployments/metadata/${b.id}`, bearer, 'GET'),
        status: 404,
        code: 'ERR_SERVER_NOT_FOUND',
      },
      {
        name: "B's deployment on the operator API with A's credential",
        send: () => guest(`/v1/default/software_deployments/${bHearth}`, bearer, 'GET'),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: 'the admin token as a Bearer on the guest API',
        send: () => guest(`/v1/guest/deployments/${bHearth}/signal`, { authorization: `Bearer ${ADMIN['x-auth-token']}` }),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's keystone token on the guest API",
        send: () => guest(`/v1/guest/deployments/${bHearth}/signal`, { 'x-auth-token': aToken }),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      // Heat-compatible resource calls: a token reaches only the resource it was issued for.
      {
        name: "A's token reads B's metadata",
        send: () => heat(`/v1/default/stacks/web/${stackId}/resources/b/metadata`, aToken, 'GET'),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's token reads a resource that does not exist (no different answer)",
        send: () => heat(`/v1/default/stacks/web/${stackId}/resources/zz/metadata`, aToken, 'GET'),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's token signals B's wait condition",
        send: () => heat(new URL(wb.endpoint).pathname, aToken),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's token signals B's HEAT_SIGNAL deployment",
        send: () => heat(`/v1/default/stacks/${bHeatStack}/resources/deployment/signal`, aToken),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's deployment token signals B's deployment",
        send: () => heat(`/v1/default/stacks/${bHeatStack}/resources/deployment/signal`, aDeploymentToken),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's deployment token reads B's server metadata",
        send: () => heat(`/v1/default/stacks/web/${stackId}/resources/b/metadata`, aDeploymentToken, 'GET'),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's handle token signals B's handle",
        send: () => heat(new URL(wb.endpoint).pathname, wa.token),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's token looks up another stack",
        send: () => heat('/v1/default/stacks/other', aToken, 'GET'),
        status: 404,
        code: 'ERR_STACK_NOT_FOUND',
      },
      {
        name: "A's token looks up a stack that does not exist (no different answer)",
        send: () => heat('/v1/default/stacks/nothing', aToken, 'GET'),
        status: 404,
        code: 'ERR_STACK_NOT_FOUND',
      },
      {
        name: "A's token under another project",
        send: () => heat(`/v1/other/stacks/web/${stackId}/resources/a/metadata`, aToken, 'GET'),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's Bearer credential on a Heat resource",
        send: () => app.inject({ url: `/v1/default/stacks/web/${stackId}/resources/b/metadata`, headers: bearer }),
        status: 403,
        code: 'ERR_AUTH_FORBIDDEN',
      },
      {
        name: "A's token on the operator API",
        send: () => heat('/v1/default/software_deployments', aToken, 'GET'),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      // CFN: pre-signed URLs and signed DescribeStackResource.
      {
        name: "A's CFN signal URL's signature on B's deployment path",
        send: () => injectUrl(app, 'POST', `http://${HOST}${signatureOnPath(aCfnSignal, bCfnSignal)}`, {}, json),
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "A's signature with B's access key on B's path",
        send: () => {
          const query = new URL(aCfnSignal).searchParams;
          query.set('AWSAccessKeyId', new URL(bCfnSignal).searchParams.get('AWSAccessKeyId')!);
          return injectUrl(app, 'POST', `http://${HOST}${new URL(bCfnSignal).pathname}?${query.toString()}`, {}, json);
        },
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "A's signal URL replayed as a handle PUT",
        send: () => injectUrl(app, 'PUT', aCfnSignal.replace('/v1/signal/', '/v1/waitcondition/'), cfnBody, json),
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "A's signal URL with a double slash",
        send: () => injectUrl(app, 'POST', aCfnSignal.replace('/v1/signal/', '/v1/signal//'), {}, json),
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "handle wa's cfn_url signature on handle wb",
        send: () => injectUrl(app, 'PUT', `http://${HOST}${signatureOnPath(wa.cfn_url, wb.cfn_url)}`, cfnBody, json),
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "handle wa's signal_url signature on handle wb",
        send: () => injectUrl(app, 'POST', `http://${HOST}${signatureOnPath(wa.signal_url, wb.signal_url)}`, {}, json),
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "DescribeStackResource of B with A's keys",
        send: () => app.inject({ url: describeUrl(a.accessKeyId, a.secret, 'web', 'b'), headers: { host: HOST } }),
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "DescribeStackResource of wb with A's keys",
        send: () => app.inject({ url: describeUrl(a.accessKeyId, a.secret, 'web', 'wb'), headers: { host: HOST } }),
        status: 403,
        code: /AccessDenied/,
      },
      {
        name: "DescribeStackResource of B by stack ARN with A's keys",
        send: () =>
          app.inject({
            url: describeUrl(a.accessKeyId, a.secret, `arn:openstack:heat::default:stacks/web/${stackId}`, 'b'),
            headers: { host: HOST },
          }),
        status: 403,
        code: /AccessDenied/,
      },
      // Swift temp URLs: the signature covers the method and the whole path.
      {
        name: "A's metadata temp URL's signature on B's object",
        send: () => injectUrl(app, 'GET', `http://${HOST}${signatureOnPath(a.metadataUrl, b.metadataUrl)}`),
        status: 403,
        code: /ERR_SIGNED_URL_INVALID/,
      },
      {
        name: "A's signal temp URL's signature on B's signal object",
        send: () =>
          injectUrl(
            app,
            'PUT',
            `http://${HOST}${signatureOnPath(a.inputs.TEMP_URL_SIGNAL.deploy_signal_id!, b.inputs.TEMP_URL_SIGNAL.deploy_signal_id!)}`,
            {},
            json,
          ),
        status: 403,
        code: /ERR_SIGNED_URL_INVALID/,
      },
      {
        name: "A's metadata temp URL under another account",
        send: () => injectUrl(app, 'GET', a.metadataUrl.replace('AUTH_default', 'AUTH_other')),
        status: 403,
        code: /ERR_SIGNED_URL_INVALID/,
      },
      // Metrics: only a server's own credential, and only as itself.
      {
        name: "PutMetricData signed with A's deployment credential (deploy_user_id/password are its EC2 keys)",
        send: () => {
          const params: Record<string, string> = {
            Action: 'PutMetricData',
            Namespace: 'system/linux',
            'MetricData.member.1.MetricName': 'Heartbeat',
            'MetricData.member.1.Value': '1',
            AWSAccessKeyId: aHeat.deploy_user_id!,
            SignatureVersion: '2',
            SignatureMethod: 'HmacSHA256',
            Timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
          };
          params.Signature = signV2(aHeat.deploy_password!, 'sha256', 'GET', HOST, '/v1/', params);
          return app.inject({ url: `/v1/?${new URLSearchParams(params).toString()}`, headers: { host: HOST } });
        },
        status: 403,
        code: /ERR_AUTH_FORBIDDEN/,
      },
    ];
    for (const attempt of attempts) {
      const reply = await attempt.send();
      assert.equal(reply.statusCode, attempt.status, `${attempt.name}: ${reply.body.slice(0, 300)}`);
      if (typeof attempt.code === 'string') assert.equal(reply.json<{ error: { code: string } }>().error.code, attempt.code, attempt.name);
      else assert.match(reply.body, attempt.code, attempt.name);
    }
    assert.deepEqual(await snapshot(app, b), before, "B's deployments, metadata, wait condition and events are as they were");
  } finally {
    await done();
  }
});

test('revoked and expired guest credentials are refused on every surface they worked on, and change nothing', async () => {
  const { app, done } = await testApp({ background: false });
  try {
    await ok(app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } }), 201);
    const config = await createConfig(app);
    const c = await vm(app, 'c', config);
    const stackId = (await ok(app.inject({ url: '/v1/default/stacks', headers: ADMIN }), 200)).json<{ stacks: Array<{ id: string }> }>()
      .stacks[0]!.id;
    const cToken = await keystoneToken(app, c.accessKeyId, c.secret);
    const wait = await ok(
      app.inject({
        method: 'POST',
        url: '/v1/default/stacks/web/wait_conditions',
        headers: ADMIN,
        payload: { name: 'wx', count: 1, timeout: 600, url_expires_in: 1 },
      }),
      201,
    );
    const handle = wait.json<{ wait_condition: { handle: { cfn_url: string; signal_url: string; endpoint: string; token: string } } }>()
      .wait_condition.handle;
    await ok(
      app.inject({
        method: 'POST',
        url: '/v1/default/stacks/web/scaling_groups',
        headers: ADMIN,
        payload: {
          name: 'workers',
          min_size: 1,
          max_size: 3,
          actuator: { url: 'http://127.0.0.1:1/hook', secret: 'actuator-secret-0123' },
        },
      }),
      201,
    );
    const policy = await ok(
      app.inject({
        method: 'POST',
        url: '/v1/default/stacks/web/scaling_policies',
        headers: ADMIN,
        payload: { name: 'up', group: 'workers', adjustment_type: 'change_in_capacity', scaling_adjustment: 1 },
      }),
      201,
    );
    const old = policy.json<{ scaling_policy: { alarm_url: string; signal_url: string; signal_token: string } }>().scaling_policy;
    await ok(app.inject({ method: 'POST', url: '/v1/default/stacks/web/scaling_policies/up/rotate', headers: ADMIN, payload: {} }), 200);
    const rotated = await ok(app.inject({ method: 'POST', url: '/v1/default/stacks/web/scaling_policies/up/revoke', headers: ADMIN }), 200);
    assert.equal(rotated.json<{ scaling_policy: { alarm_url: string | null } }>().scaling_policy.alarm_url, null);
    await ok(app.inject({ method: 'DELETE', url: `/v1/default/servers/${c.id}`, headers: ADMIN }), 204);
    await new Promise((resolve) => setTimeout(resolve, 1100)); // past the handle's url_expires_in
    const events = async () =>
      (await ok(app.inject({ url: '/v1/default/events', headers: ADMIN }), 200)).json<{ events: unknown[] }>().events.length;
    const before = await events();
    const json = { 'content-type': 'application/json' };
    const attempts: Attempt[] = [
      {
        name: "a deleted server's Bearer credential",
        send: () => app.inject({ url: '/v1/guest/metadata', headers: { authorization: `Bearer ${c.token}` } }),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      {
        name: "a deleted server's keystone token",
        send: () => app.inject({ url: `/v1/default/stacks/web/${stackId}/resources/c/metadata`, headers: { 'x-auth-token': cToken } }),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      {
        name: "a deleted server's keystone login",
        send: () =>
          app.inject({
            method: 'POST',
            url: '/v3/auth/tokens',
            payload: { auth: { identity: { methods: ['password'], password: { user: { id: c.accessKeyId, password: c.secret } } } } },
          }),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      {
        name: "a deleted server's EC2 keys",
        send: () => app.inject({ url: describeUrl(c.accessKeyId, c.secret, 'web', 'c'), headers: { host: HOST } }),
        status: 403,
        code: /InvalidClientTokenId/,
      },
      {
        name: "a deleted server's metadata temp URL",
        send: () => injectUrl(app, 'GET', c.metadataUrl),
        status: 403,
        code: /ERR_SIGNED_URL_INVALID/,
      },
      {
        name: "an expired handle's cfn_url",
        send: () => injectUrl(app, 'PUT', handle.cfn_url, { Status: 'SUCCESS', Reason: 'r', UniqueId: '1', Data: 'd' }, json),
        status: 403,
        code: /ERR_SIGNED_URL_EXPIRED/,
      },
      {
        name: "an expired handle's signal_url",
        send: () => injectUrl(app, 'POST', handle.signal_url, {}, json),
        status: 403,
        code: /ERR_SIGNED_URL_EXPIRED/,
      },
      {
        name: "an expired handle's token",
        send: () =>
          app.inject({ method: 'POST', url: new URL(handle.endpoint).pathname, headers: { 'x-auth-token': handle.token }, payload: {} }),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
      {
        name: "a rotated policy's alarm_url",
        send: () => injectUrl(app, 'POST', old.alarm_url, {}, json),
        status: 403,
        code: /InvalidClientTokenId/,
      },
      {
        name: "a rotated policy's token",
        send: () =>
          app.inject({ method: 'POST', url: new URL(old.signal_url).pathname, headers: { 'x-auth-token': old.signal_token }, payload: {} }),
        status: 401,
        code: 'ERR_AUTH_INVALID',
      },
    ];
    for (const attempt of attempts) {
      const reply = await attempt.send();
      assert.equal(reply.statusCode, attempt.status, `${attempt.name}: ${reply.body.slice(0, 300)}`);
      if (typeof attempt.code === 'string') assert.equal(reply.json<{ error: { code: string } }>().error.code, attempt.code, attempt.name);
      else assert.match(reply.body, attempt.code, attempt.name);
    }
    assert.equal(await events(), before, 'no refused attempt wrote an event');
    const group = await ok(app.inject({ url: '/v1/default/stacks/web/scaling_groups/workers', headers: ADMIN }), 200);
    assert.equal(group.json<{ scaling_group: { desired_capacity: number } }>().scaling_group.desired_capacity, 1);
    const condition = await ok(app.inject({ url: '/v1/default/stacks/web/wait_conditions/wx', headers: ADMIN }), 200);
    assert.equal(condition.json<{ wait_condition: { received: number } }>().wait_condition.received, 0);
  } finally {
    await done();
  }
});
