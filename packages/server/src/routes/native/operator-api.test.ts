import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, registerServer, testApp } from '../../test-support.ts';

interface Deployment {
  input_values: Record<string, unknown>;
  status: string;
  derived_config_id: string;
  deadline: string | null;
}
interface Entry {
  id: string;
  inputs: Array<{ name: string; value?: unknown }>;
}

const put = (app: FastifyInstance, id: string, payload: Record<string, unknown>) =>
  app.inject({ method: 'PUT', url: `/v1/default/software_deployments/${id}`, headers: ADMIN, payload });

const show = async (app: FastifyInstance, id: string): Promise<Deployment> =>
  (await app.inject({ url: `/v1/default/software_deployments/${id}`, headers: ADMIN })).json<{ software_deployment: Deployment }>()
    .software_deployment;

// 55-heat-config reads `input['value']` of every input (a KeyError otherwise fails the deployment
// before its hook runs, so it never signals); Heat's derived inputs always carry the key.
test('every derived input has a value key, null when neither given nor defaulted (native and guest metadata)', async () => {
  const { app, done } = await testApp();
  try {
    const server = await registerServer(app);
    const configId = await createConfig(app, {
      inputs: [{ name: 'plain' }, { name: 'count', type: 'Number' }, { name: 'given', default: 'd' }, { name: 'dflt', default: 'x' }],
    });
    await createDeployment(app, configId, server.id, { input_values: { given: 'g', extra: null } });

    const native = await app.inject({ url: `/v1/default/software_deployments/metadata/${server.id}`, headers: ADMIN });
    assert.equal(native.statusCode, 200, native.body);
    const guest = await app.inject({ url: '/v1/guest/metadata', headers: server.auth });
    for (const entry of [native.json<{ metadata: Entry[] }>().metadata[0]!, guest.json<{ deployments: Entry[] }>().deployments[0]!]) {
      const missing = entry.inputs.filter((i) => !Object.hasOwn(i, 'value')).map((i) => i.name);
      assert.deepEqual(missing, [], 'inputs without a value key');
      const values = Object.fromEntries(entry.inputs.map((i) => [i.name, i.value]));
      assert.equal(values.plain, null);
      assert.equal(values.count, null);
      assert.equal(values.given, 'g');
      assert.equal(values.dflt, 'x');
      assert.equal(values.extra, null);
    }
  } finally {
    await done();
  }
});

// Heat's update_software_deployment applies a key only when it is truthy: `input_values: {}` is skipped.
test('PUT input_values {} changes nothing: no new action, inputs kept, not reported as changed', async () => {
  const { app, done } = await testApp();
  try {
    const id = await createDeployment(app, await createConfig(app), 'vm-a', { input_values: { foo: 'bar' } });
    const completed = await put(app, id, { status: 'COMPLETE', output_values: { result: 'ok' } });
    assert.equal(completed.statusCode, 200, completed.body);
    const before = await show(app, id);

    const reply = await put(app, id, { input_values: {} });
    assert.equal(reply.statusCode, 200, reply.body);
    const after = await show(app, id);
    assert.deepEqual(after.input_values, { foo: 'bar' });
    assert.equal(after.status, 'COMPLETE', 'no new action was started');
    assert.equal(after.derived_config_id, before.derived_config_id, 'the server is not asked to run the config again');
    assert.equal(after.deadline, null);

    const empty = await put(app, id, { input_values: {}, output_values: {}, status_reason: '' });
    assert.equal(empty.statusCode, 200, empty.body);
    const timeline = await app.inject({ url: `/v1/default/software_deployments/${id}/timeline`, headers: ADMIN });
    const last = timeline.json<{ timeline: Array<{ message: string; data: { changed?: string[] } }> }>().timeline.at(-1)!;
    assert.deepEqual(last.data.changed, []);
    assert.equal(last.message, 'Deployment updated (nothing)');

    const real = await put(app, id, { input_values: { foo: 'baz' } });
    assert.equal(
      real.json<{ software_deployment: Deployment }>().software_deployment.status,
      'IN_PROGRESS',
      'a non-empty map still starts an action',
    );
  } finally {
    await done();
  }
});

// Heat lists every config and every deployment when no limit is given, and heatclient's
// `software config list` / `software deployment list` do not page: a default page of 100 configs
// (oldest first) hid every newer config, and one of 1,000 deployments hid the rest of a fleet.
test('GET /software_configs and /software_deployments without a limit list all of them; limit and marker still page', async () => {
  const { app, done } = await testApp();
  try {
    const configs: string[] = [];
    for (let i = 0; i < 102; i++) configs.push(await createConfig(app, { name: `cfg-${i}` }));
    const deployments: string[] = [];
    for (let i = 0; i < 1002; i++) deployments.push(await createDeployment(app, configs[i % 2]!, `vm-${i % 3}`));
    const ids = async (url: string) => {
      const reply = await app.inject({ url: `/v1/default/${url}`, headers: ADMIN });
      assert.equal(reply.statusCode, 200, reply.body);
      const [items] = Object.values(reply.json<Record<string, Array<{ id: string }>>>());
      return items!.map((item) => item.id);
    };
    // Oldest first; ids created within the same millisecond sort by id.
    const allConfigs = await ids('software_configs');
    assert.deepEqual([...allConfigs].sort(), [...configs].sort());
    const allDeployments = await ids('software_deployments');
    assert.deepEqual([...allDeployments].sort(), [...deployments].sort());
    const onVm1 = await ids('software_deployments?server_id=vm-1');
    assert.deepEqual(
      onVm1,
      allDeployments.filter((id) => deployments.indexOf(id) % 3 === 1),
    );
    assert.deepEqual(await ids('software_configs?limit=100'), allConfigs.slice(0, 100));
    assert.deepEqual(await ids(`software_configs?marker=${allConfigs[99]!}`), allConfigs.slice(100));
    assert.deepEqual(await ids(`software_deployments?limit=2&marker=${allDeployments[999]!}`), allDeployments.slice(1000));
  } finally {
    await done();
  }
});

// heatclient's `stack list --limit N` asks again with `marker` = the last stack id until it has N
// stacks; a list that ignored limit and marker gave the same stacks again on every page.
test('GET /stacks and /servers page by limit and marker; an unknown marker is a coded 404', async () => {
  const { app, done } = await testApp();
  try {
    for (const name of ['gamma', 'alpha', 'beta']) {
      const created = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: name } });
      assert.equal(created.statusCode, 201, created.body);
      await registerServer(app, name);
    }
    for (const kind of ['stacks', 'servers'] as const) {
      const list = async (query: string) => {
        const reply = await app.inject({ url: `/v1/default/${kind}${query}`, headers: ADMIN });
        assert.equal(reply.statusCode, 200, reply.body);
        return reply.json<Record<string, Array<{ id: string; stack_name?: string; name?: string }>>>()[kind]!;
      };
      const all = await list('');
      assert.equal(all.length, 3);
      const first = await list('?limit=2');
      assert.deepEqual(
        first.map((r) => r.id),
        all.slice(0, 2).map((r) => r.id),
      );
      const rest = await list(`?limit=2&marker=${first.at(-1)!.id}`);
      assert.deepEqual(
        rest.map((r) => r.id),
        all.slice(2).map((r) => r.id),
      );
      assert.deepEqual(await list(`?marker=${all.at(-1)!.id}`), []);

      const unknown = await app.inject({ url: `/v1/default/${kind}?marker=no-such-${kind}`, headers: ADMIN });
      assert.equal(unknown.statusCode, 404, unknown.body);
      // /servers is hearth's: nothing but paging. /stacks also takes (and ignores) Heat's other list parameters.
      for (const bad of ['?limit=0', '?limit=-1', '?limit=abc', '?limit=100000', ...(kind === 'servers' ? ['?sort_keys=name'] : [])]) {
        const reply = await app.inject({ url: `/v1/default/${kind}${bad}`, headers: ADMIN });
        assert.equal(reply.statusCode, 400, `${kind}${bad}: ${reply.body}`);
      }
    }
    const heatFlags = await app.inject({
      url: '/v1/default/stacks?global_tenant=True&show_nested=False&sort_keys=name&limit=1',
      headers: ADMIN,
    });
    assert.equal(heatFlags.statusCode, 200, heatFlags.body);
    assert.equal(heatFlags.json<{ stacks: unknown[] }>().stacks.length, 1);
    const names = (await app.inject({ url: '/v1/default/stacks?limit=2', headers: ADMIN })).json<{
      stacks: Array<{ stack_name: string }>;
    }>();
    assert.deepEqual(
      names.stacks.map((s) => s.stack_name),
      ['alpha', 'beta'],
    );
  } finally {
    await done();
  }
});

// A server's agent reads only its own project's deployments: one created from another project was
// accepted, never delivered, and failed at its deadline an hour later.
test('a deployment for a server registered in another project is a coded 400, and nothing is stored', async () => {
  const { app, done } = await testApp();
  try {
    await app.services.store.write(async ({ trx, now }) => {
      await trx.insertInto('projects').values({ id: 'other', name: 'other', created_at: now }).execute();
    });
    const server = await app.inject({ method: 'POST', url: '/v1/other/servers', headers: ADMIN, payload: { name: 'b', id: 'srv-b' } });
    assert.equal(server.statusCode, 201, server.body);
    const configId = await createConfig(app);

    const refused = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: configId, server_id: 'srv-b' },
    });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(errorCode(refused), 'ERR_DEPLOYMENT_INVALID');
    assert.match(refused.json<{ explanation: string }>().explanation, /another project/);
    const listed = await app.inject({ url: '/v1/default/software_deployments', headers: ADMIN });
    assert.deepEqual(listed.json<{ software_deployments: unknown[] }>().software_deployments, []);
    const events = await app.inject({ url: '/v1/default/events?type=deployment.created', headers: ADMIN });
    assert.deepEqual(events.json<{ events: unknown[] }>().events, []);

    // Its own project may deploy to it, and an id no project registered is still accepted (Heat's order).
    const otherConfig = await app.inject({ method: 'POST', url: '/v1/other/software_configs', headers: ADMIN, payload: { config: 'x' } });
    const otherConfigId = otherConfig.json<{ software_config: { id: string } }>().software_config.id;
    const own = await app.inject({
      method: 'POST',
      url: '/v1/other/software_deployments',
      headers: ADMIN,
      payload: { config_id: otherConfigId, server_id: 'srv-b' },
    });
    assert.equal(own.statusCode, 200, own.body);
    await createDeployment(app, configId, 'not-registered-yet');
    // A config of the other project stays invisible here.
    const foreign = await app.inject({
      method: 'POST',
      url: '/v1/default/software_deployments',
      headers: ADMIN,
      payload: { config_id: otherConfigId, server_id: 'vm-a' },
    });
    assert.equal(errorCode(foreign), 'ERR_CONFIG_NOT_FOUND');
  } finally {
    await done();
  }
});

// `stacks/{name}/{id}` resolved its id segment by name as well, so `DELETE stacks/web/web` deleted stack web.
test('stacks/{name}/{id} takes only the stack id in the id segment: a name there is a 404 and deletes nothing', async () => {
  const { app, done } = await testApp();
  try {
    const created = await app.inject({ method: 'POST', url: '/v1/default/stacks', headers: ADMIN, payload: { stack_name: 'web' } });
    const id = created.json<{ stack: { id: string } }>().stack.id;
    for (const method of ['GET', 'DELETE'] as const) {
      const reply = await app.inject({ method, url: '/v1/default/stacks/web/web', headers: ADMIN });
      assert.equal(reply.statusCode, 404, `${method}: ${reply.body}`);
      assert.equal(errorCode(reply), 'ERR_STACK_NOT_FOUND');
    }
    const shown = await app.inject({ url: `/v1/default/stacks/web/${id}`, headers: ADMIN });
    assert.equal(shown.statusCode, 200, 'the stack is still there');
    const deleted = await app.inject({ method: 'DELETE', url: `/v1/default/stacks/web/${id}`, headers: ADMIN });
    assert.equal(deleted.statusCode, 204, deleted.body);
  } finally {
    await done();
  }
});
