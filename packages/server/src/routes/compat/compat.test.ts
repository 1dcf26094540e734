import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, errorCode, injectUrl, testApp } from '../../test-support.ts';

interface Created {
  server: { id: string; stack_name: string; resource_name: string; stack_id: string | null };
  credential: { access_key_id: string; secret_access_key: string };
  os_collect_config: Record<string, Record<string, string>>;
  os_collect_config_conf: string;
}

async function server(app: FastifyInstance, body: Record<string, unknown>): Promise<Created> {
  const reply = await app.inject({ method: 'POST', url: '/v1/default/servers', headers: ADMIN, payload: body });
  assert.equal(reply.statusCode, 201, reply.body);
  return reply.json<Created>();
}

async function deploy(app: FastifyInstance, serverId: string, extra: Record<string, unknown> = {}): Promise<string> {
  const config = await createConfig(app);
  const reply = await app.inject({
    method: 'POST',
    url: '/v1/default/software_deployments',
    headers: ADMIN,
    payload: { config_id: config, server_id: serverId, ...extra },
  });
  assert.equal(reply.statusCode, 200, reply.body);
  return reply.json().software_deployment.id as string;
}

/** Signs a GET as os-collect-config's cfn collector does (EC2 signature v2, computed here independently). */
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
  const cqs = Object.keys(params)
    .sort()
    .map((k) => `${enc(k)}=${enc(params[k]!)}`)
    .join('&');
  const signature = createHmac('sha256', secret).update(`GET\n${url.host}\n${url.pathname}\n${cqs}`).digest('base64');
  return `${base}?${cqs}&Signature=${enc(signature)}`;
}

test('server create prints Heat-shaped os-collect-config settings and a ready conf for each transport', async () => {
  const { app, done } = await testApp();
  try {
    const cfn = await server(app, { name: 'vm1', software_config_transport: 'POLL_SERVER_CFN' });
    assert.deepEqual(Object.keys(cfn.os_collect_config.cfn!).sort(), [
      'access_key_id',
      'metadata_url',
      'path',
      'secret_access_key',
      'stack_name',
    ]);
    assert.equal(cfn.os_collect_config.cfn!.metadata_url, 'http://127.0.0.1:9/v1/');
    assert.equal(cfn.os_collect_config.cfn!.path, 'server.Metadata');
    assert.match(
      cfn.os_collect_config_conf,
      /^\[DEFAULT\]\ncommand = os-refresh-config\ncollectors = cfn\n\n\[cfn\]\nmetadata_url = http:\/\/127\.0\.0\.1:9\/v1\/\n/,
    );
    const heat = await server(app, { name: 'vm2', software_config_transport: 'POLL_SERVER_HEAT' });
    assert.equal(heat.os_collect_config.heat!.auth_url, 'http://127.0.0.1:9/v3');
    assert.equal(heat.os_collect_config.heat!.stack_id, `servers/${heat.server.id}`);
    const temp = await server(app, { name: 'vm3', software_config_transport: 'POLL_TEMP_URL' });
    assert.match(
      temp.os_collect_config.request!.metadata_url!,
      /\/v1\/swift\/v1\/AUTH_default\/metadata\/[0-9a-f]{32}\?temp_url_sig=[0-9a-f]{40}&temp_url_expires=\d+$/,
    );
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/default/servers',
      headers: ADMIN,
      payload: { name: 'x', software_config_transport: 'ZAQAR' },
    });
    assert.equal(bad.statusCode, 400);
    const native = await server(app, { name: 'vm4' });
    assert.deepEqual(native.os_collect_config.hearth, {
      metadata_url: 'http://127.0.0.1:9/v1/guest/metadata',
      server_id: native.server.id,
      access_key_id: native.credential.access_key_id,
      secret_access_key: native.credential.secret_access_key,
    });
    assert.match(native.os_collect_config_conf, /\ncollectors = hearth\n\n\[hearth\]\nmetadata_url = /);
  } finally {
    await done();
  }
});

test('DescribeStackResource (signature v2): XML for os-collect-config, JSON on request; only the own resource', async () => {
  const { app, done } = await testApp();
  try {
    await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    const vm1 = await server(app, { name: 'vm1', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
    const vm2 = await server(app, { name: 'vm2', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
    const deploymentId = await deploy(app, vm1.server.id);
    const { access_key_id: ak, secret_access_key: sk } = vm1.credential;
    const xml = await injectUrl(app, 'GET', signedDescribe('http://127.0.0.1:9/v1/', ak, sk, 'web', 'vm1'));
    assert.equal(xml.statusCode, 200, xml.body);
    assert.match(xml.body, /^<DescribeStackResourceResponse><DescribeStackResourceResult><StackResourceDetail>/);
    const text = /<Metadata>(.*)<\/Metadata>/s.exec(xml.body)?.[1] ?? '';
    const unescaped = text
      .replaceAll('&quot;', '"')
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&amp;', '&')
      .replaceAll('&apos;', "'");
    const metadata = JSON.parse(unescaped);
    assert.equal(metadata.deployments.length, 1);
    assert.equal(metadata['os-collect-config'].cfn.access_key_id, ak);
    const timeline = await app.inject({ url: `/v1/default/software_deployments/${deploymentId}/timeline`, headers: ADMIN });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const types = (await app.inject({ url: `/v1/default/software_deployments/${deploymentId}/timeline`, headers: ADMIN }))
      .json()
      .timeline.map((e: { type: string }) => e.type);
    assert.ok(timeline.statusCode === 200 && types.includes('deployment.fetched'), types.join());

    const json = await injectUrl(app, 'GET', signedDescribe('http://127.0.0.1:9/v1/', ak, sk, 'web', 'vm1') + '&ContentType=JSON');
    // ContentType is a signed parameter: appended afterwards, the signature no longer matches.
    assert.equal(json.statusCode, 403);
    assert.match(json.body, /"Code":"AccessDenied"/);

    // vm1's keys asking for vm2's resource: denied, and vm2's metadata is not in the reply.
    const foreign = await injectUrl(app, 'GET', signedDescribe('http://127.0.0.1:9/v1/', ak, sk, 'web', 'vm2'));
    assert.equal(foreign.statusCode, 403);
    assert.doesNotMatch(foreign.body, new RegExp(vm2.credential.access_key_id));
    const wrongSecret = await injectUrl(app, 'GET', signedDescribe('http://127.0.0.1:9/v1/', ak, 'not-the-secret', 'web', 'vm1'));
    assert.equal(wrongSecret.statusCode, 403);
    const unknownAction = await app.inject({ url: '/v1/?Action=ListStacks' });
    assert.equal(unknownAction.statusCode, 400);

    // Deleting the server revokes its keys.
    await app.inject({ method: 'DELETE', url: `/v1/default/servers/${vm1.server.id}`, headers: ADMIN });
    const revoked = await injectUrl(app, 'GET', signedDescribe('http://127.0.0.1:9/v1/', ak, sk, 'web', 'vm1'));
    assert.equal(revoked.statusCode, 403);
  } finally {
    await done();
  }
});

test('keystone shim and Heat resource metadata: password login, catalog, token scoped to one resource', async () => {
  const { app, done } = await testApp();
  try {
    const vm1 = await server(app, { name: 'vm1', software_config_transport: 'POLL_SERVER_HEAT' });
    const vm2 = await server(app, { name: 'vm2', software_config_transport: 'POLL_SERVER_HEAT' });
    await deploy(app, vm1.server.id);
    const heat = vm1.os_collect_config.heat!;
    const discovery = await app.inject({ url: '/v3' });
    assert.equal(discovery.statusCode, 200);
    assert.equal(discovery.json().version.id, 'v3.14');
    const login = (password: string, project = heat.project_id) =>
      app.inject({
        method: 'POST',
        url: '/v3/auth/tokens',
        payload: {
          auth: {
            identity: { methods: ['password'], password: { user: { id: heat.user_id, password } } },
            scope: { project: { id: project } },
          },
        },
      });
    const wrong = await login('wrong-password');
    assert.equal(wrong.statusCode, 401);
    assert.equal(wrong.headers['x-subject-token'], undefined);
    assert.equal((await login(heat.password!, 'other-project')).statusCode, 403);
    const ok = await login(heat.password!);
    assert.equal(ok.statusCode, 201);
    const token = ok.headers['x-subject-token'] as string;
    const orchestration = ok.json().token.catalog.find((c: { type: string }) => c.type === 'orchestration');
    const endpoint = orchestration.endpoints.find((e: { interface: string }) => e.interface === 'public').url as string;
    assert.equal(endpoint, 'http://127.0.0.1:9/v1/default');
    const own = await injectUrl(app, 'GET', `${endpoint}/stacks/${heat.stack_id}/resources/${heat.resource_name}/metadata`, undefined, {
      'x-auth-token': token,
    });
    assert.equal(own.statusCode, 200, own.body);
    assert.equal(own.json().metadata.deployments.length, 1);
    const other = await injectUrl(app, 'GET', `${endpoint}/stacks/servers/${vm2.server.id}/resources/server/metadata`, undefined, {
      'x-auth-token': token,
    });
    assert.equal(other.statusCode, 403);
    assert.equal(errorCode(other), 'ERR_AUTH_FORBIDDEN');
    const forged = await injectUrl(app, 'GET', `${endpoint}/stacks/${heat.stack_id}/resources/server/metadata`, undefined, {
      'x-auth-token': `${token.slice(0, -2)}xx`,
    });
    assert.equal(forged.statusCode, 401);
    // The guest token reaches nothing of the operator's API.
    const configs = await app.inject({ url: '/v1/default/software_configs', headers: { 'x-auth-token': token } });
    assert.equal(configs.statusCode, 401);
  } finally {
    await done();
  }
});

test("deployment signal transports: CFN_SIGNAL, HEAT_SIGNAL and TEMP_URL_SIGNAL carry Heat's inputs and complete the deployment", async () => {
  const { app, done } = await testApp();
  try {
    const vm = await server(app, { name: 'vm1' });
    type Derived = { name: string; inputs: Array<{ name: string; value: string }> };
    /** The deploy inputs of the derived config named like the deployment. */
    const inputsOf = async (name: string): Promise<Record<string, string>> => {
      const metadata = await app.inject({ url: `/v1/default/software_deployments/metadata/${vm.server.id}`, headers: ADMIN });
      const derived = metadata.json<{ metadata: Derived[] }>().metadata.find((d) => d.name === name);
      assert.ok(derived, `no derived config named ${name}`);
      return Object.fromEntries(derived.inputs.map((i) => [i.name, i.value]));
    };
    const status = async (id: string) =>
      (await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN })).json<{
        software_deployment: { status: string };
      }>().software_deployment.status;

    const cfnId = await deploy(app, vm.server.id, { signal_transport: 'CFN_SIGNAL', name: 'a-cfn' });
    const cfnInputs = await inputsOf('a-cfn');
    assert.equal(cfnInputs.deploy_signal_verb, 'POST');
    assert.match(
      cfnInputs.deploy_signal_id!,
      new RegExp(
        `^http://127\\.0\\.0\\.1:9/v1/signal/arn%3Aopenstack%3Aheat%3A%3Adefault%3Astacks/deployments/${cfnId}/resources/deployment\\?`,
      ),
    );
    const signalled = await injectUrl(
      app,
      'POST',
      cfnInputs.deploy_signal_id!,
      { deploy_status_code: 0, deploy_stdout: 'hi', result: 'r' },
      { 'content-type': 'application/json' },
    );
    assert.equal(signalled.statusCode, 200, signalled.body);
    assert.equal(await status(cfnId), 'COMPLETE');

    const heatId = await deploy(app, vm.server.id, { signal_transport: 'HEAT_SIGNAL', name: 'b-heat' });
    const heatInputs = await inputsOf('b-heat');
    assert.deepEqual(
      Object.keys(heatInputs).filter((k) => k.startsWith('deploy_')),
      [
        'deploy_server_id',
        'deploy_action',
        'deploy_stack_id',
        'deploy_resource_name',
        'deploy_signal_transport',
        'deploy_auth_url',
        'deploy_username',
        'deploy_user_id',
        'deploy_password',
        'deploy_project_id',
        'deploy_timeout',
      ],
    );
    const login = await app.inject({
      method: 'POST',
      url: '/v3/auth/tokens',
      payload: {
        auth: {
          identity: { methods: ['password'], password: { user: { id: heatInputs.deploy_user_id, password: heatInputs.deploy_password } } },
          scope: { project: { id: 'default' } },
        },
      },
    });
    const token = login.headers['x-subject-token'] as string;
    const heatSignal = await app.inject({
      method: 'POST',
      url: `/v1/default/stacks/${heatInputs.deploy_stack_id}/resources/${heatInputs.deploy_resource_name}/signal`,
      headers: { 'x-auth-token': token, 'content-type': 'application/json' },
      payload: { deploy_status_code: 3, deploy_stderr: 'boom' },
    });
    assert.equal(heatSignal.statusCode, 200, heatSignal.body);
    assert.equal(await status(heatId), 'FAILED');

    const tempId = await deploy(app, vm.server.id, { signal_transport: 'TEMP_URL_SIGNAL', name: 'c-temp' });
    const tempInputs = await inputsOf('c-temp');
    assert.equal(tempInputs.deploy_signal_verb, 'PUT');
    const forged = await injectUrl(
      app,
      'PUT',
      tempInputs.deploy_signal_id!.replace(/temp_url_sig=(.)/, (_m, c: string) => `temp_url_sig=${c === '0' ? '1' : '0'}`),
      {
        deploy_status_code: 0,
      },
    );
    assert.equal(forged.statusCode, 403);
    const put = await injectUrl(app, 'PUT', tempInputs.deploy_signal_id!, { deploy_status_code: 0 });
    assert.equal(put.statusCode, 201, put.body);
    assert.equal(await status(tempId), 'COMPLETE');
  } finally {
    await done();
  }
});

test('POLL_TEMP_URL: HEAD and GET with Last-Modified; a forged or revoked URL is a 403', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await server(app, { name: 'vm1', software_config_transport: 'POLL_TEMP_URL' });
    await deploy(app, vm.server.id);
    const url = vm.os_collect_config.request!.metadata_url!;
    const head = await injectUrl(app, 'HEAD', url);
    assert.equal(head.statusCode, 200);
    assert.match(head.headers['last-modified'] as string, /^\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT$/);
    const got = await injectUrl(app, 'GET', url);
    assert.equal(got.statusCode, 200);
    assert.equal(got.json().deployments.length, 1);
    assert.equal((await injectUrl(app, 'GET', url.replace(/temp_url_expires=\d+/, 'temp_url_expires=2147483646'))).statusCode, 403);
    await app.inject({ method: 'DELETE', url: `/v1/default/servers/${vm.server.id}`, headers: ADMIN });
    assert.equal((await injectUrl(app, 'GET', url)).statusCode, 403);
  } finally {
    await done();
  }
});

test('a signal URL issued for an earlier action is refused with 409 and settles nothing (HEARTH_SIGNAL, CFN_SIGNAL)', async () => {
  const { app, done } = await testApp();
  try {
    const vm = await server(app, { name: 'vm1' });
    const signalUrl = async (name: string) => {
      const metadata = await app.inject({ url: `/v1/default/software_deployments/metadata/${vm.server.id}`, headers: ADMIN });
      const derived = metadata
        .json<{ metadata: Array<{ name: string; inputs: Array<{ name: string; value: string }> }> }>()
        .metadata.find((d) => d.name === name);
      return derived?.inputs.find((i) => i.name === 'deploy_signal_id')?.value ?? '';
    };
    const status = async (id: string) =>
      (await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN })).json<{
        software_deployment: { status: string };
      }>().software_deployment.status;
    for (const transport of ['HEARTH_SIGNAL', 'CFN_SIGNAL']) {
      const name = `d-${transport}`;
      const id = await deploy(app, vm.server.id, { signal_transport: transport, name });
      const first = await signalUrl(name);
      await new Promise((resolve) => setTimeout(resolve, 1100)); // CFN URLs are bound to the action's start, to the second
      const updated = await app.inject({
        method: 'PUT',
        url: `/v1/default/software_deployments/${id}`,
        headers: ADMIN,
        payload: { action: 'UPDATE' },
      });
      assert.equal(updated.statusCode, 200);
      const second = await signalUrl(name);
      assert.notEqual(second, first);
      const stale = await injectUrl(app, 'POST', first, { deploy_status_code: 0 }, { 'content-type': 'application/json' });
      assert.equal(stale.statusCode, 409, `${transport}: ${stale.body}`);
      assert.match(stale.body, /ERR_SIGNAL_STALE/);
      assert.equal(await status(id), 'IN_PROGRESS');
      const current = await injectUrl(app, 'POST', second, { deploy_status_code: 0 }, { 'content-type': 'application/json' });
      assert.equal(current.statusCode, 200, current.body);
      assert.equal(await status(id), 'COMPLETE');
    }
  } finally {
    await done();
  }
});
