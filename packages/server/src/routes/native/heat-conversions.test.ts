// What Heat's API does with values python-heatclient users send that hearth once refused or kept
// as sent: a list limit above 1000, boolean item keys given as strings, typed input defaults (which
// Heat converts to the input's type), and a deployment created without a status_reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ADMIN, createConfig, createDeployment, errorCode, testApp } from '../../test-support.ts';

interface Item {
  name: string;
  type: string;
  default?: unknown;
  value?: unknown;
  replace_on_change?: boolean;
  error_output?: boolean;
}
interface Config {
  id: string;
  inputs: Item[];
  outputs: Item[];
}

const post = (app: FastifyInstance, url: string, payload: Record<string, unknown>) =>
  app.inject({ method: 'POST', url: `/v1/default${url}`, headers: ADMIN, payload });
const get = (app: FastifyInstance, url: string) => app.inject({ url: `/v1/default${url}`, headers: ADMIN });
const ids = (reply: { json: <T>() => T }, key: string) => reply.json<Record<string, Array<{ id: string }>>>()[key]!.map((r) => r.id);
const storedConfigs = async (app: FastifyInstance) => app.services.store.reader.selectFrom('software_configs').select('id').execute();

// Heat's list takes any limit (oslo paginate_query, no maximum): a bigger one than there are rows lists them all.
test('software_configs and software_deployments take a limit above 1000: everything, and marker still pages', async () => {
  const { app, done } = await testApp();
  try {
    const created = [await createConfig(app), await createConfig(app), await createConfig(app)];
    const deploymentIds = [await createDeployment(app, created[0]!, 'vm-1'), await createDeployment(app, created[1]!, 'vm-1')];
    // As Heat lists them: newest first (ties in one millisecond by id, also descending).
    const configIds = ids(await get(app, '/software_configs'), 'software_configs');
    assert.deepEqual([...configIds].sort(), [...created].sort());
    for (const limit of ['5000', '1001', String(2 ** 31), '99999999999999999999']) {
      const all = await get(app, `/software_configs?limit=${limit}`);
      assert.equal(all.statusCode, 200, `limit=${limit}: ${all.body}`);
      assert.deepEqual(ids(all, 'software_configs'), configIds, `limit=${limit}`);
      const after = await get(app, `/software_configs?limit=${limit}&marker=${configIds[0]}`);
      assert.equal(after.statusCode, 200, after.body);
      assert.deepEqual(ids(after, 'software_configs'), configIds.slice(1));
      const deployments = await get(app, `/software_deployments?limit=${limit}&server_id=vm-1`);
      assert.equal(deployments.statusCode, 200, deployments.body);
      assert.deepEqual(new Set(ids(deployments, 'software_deployments')), new Set(deploymentIds));
    }
    // Small limits page as before; a limit that is not a whole number from 1 is still refused.
    const first = await get(app, '/software_configs?limit=2');
    assert.deepEqual(ids(first, 'software_configs'), configIds.slice(0, 2));
    const next = await get(app, `/software_configs?limit=2&marker=${configIds[1]}`);
    assert.deepEqual(ids(next, 'software_configs'), configIds.slice(2));
    for (const limit of ['0', '-1', '1.5', 'abc', 'Infinity']) {
      const bad = await get(app, `/software_configs?limit=${limit}`);
      assert.equal(bad.statusCode, 400, `limit=${limit}: ${bad.body}`);
      assert.equal(errorCode(bad), 'ERR_REQUEST_INVALID');
    }
  } finally {
    await done();
  }
});

// Heat's error_output and replace_on_change are boolean properties: a boolean, or "true"/"false" in any case.
test('error_output and replace_on_change given as "true"/"false" strings are stored as booleans; other strings are a coded 400', async () => {
  const { app, done } = await testApp();
  try {
    const reply = await post(app, '/software_configs', {
      inputs: [
        { name: 'a', replace_on_change: 'TRUE' },
        { name: 'b', replace_on_change: 'false' },
      ],
      outputs: [
        { name: 'x', error_output: 'true' },
        { name: 'y', error_output: 'True' },
        { name: 'z', error_output: 'FALSE' },
      ],
    });
    assert.equal(reply.statusCode, 200, reply.body);
    const config = reply.json<{ software_config: Config }>().software_config;
    assert.deepEqual(config.inputs, [
      { name: 'a', type: 'String', replace_on_change: true },
      { name: 'b', type: 'String' },
    ]);
    assert.deepEqual(config.outputs, [
      { name: 'x', type: 'String', error_output: true },
      { name: 'y', type: 'String', error_output: true },
      { name: 'z', type: 'String', error_output: false },
    ]);
    const before = await storedConfigs(app);
    for (const [item, key, value] of [
      ['outputs', 'error_output', 'yes'],
      ['outputs', 'error_output', '1'],
      ['outputs', 'error_output', ''],
      ['inputs', 'replace_on_change', 'on'],
    ] as const) {
      const bad = await post(app, '/software_configs', { [item]: [{ name: 'n', [key]: value }] });
      assert.equal(bad.statusCode, 400, bad.body);
      assert.equal(errorCode(bad), 'ERR_CONFIG_INVALID', bad.body);
      assert.ok(
        bad.json<{ error: { message: string } }>().error.message.includes(`${key}: ${JSON.stringify(value)} is not a valid boolean`),
        bad.body,
      );
    }
    const number = await post(app, '/software_configs', { outputs: [{ name: 'n', error_output: 1 }] });
    assert.equal(number.statusCode, 400, number.body);
    assert.deepEqual(await storedConfigs(app), before, 'a refused config stores nothing');
  } finally {
    await done();
  }
});

// heat/engine/software_config_io.py: a default given with a type is read as a property of that
// type (properties.Property.get_value), and the converted value is what Heat stores and derives.
test('a typed input default is stored converted to its type, as Heat stores it, and the server receives that value', async () => {
  const { app, done } = await testApp();
  try {
    const inputs = [
      { name: 'n_text', type: 'Number', default: '5' },
      { name: 'n_float', type: 'Number', default: ' 2.5 ' },
      { name: 'n_grouped', type: 'Number', default: '1_000' },
      { name: 'n_exp', type: 'Number', default: '1e3' },
      { name: 'n_number', type: 'Number', default: 7 },
      { name: 'n_bool', type: 'Number', default: true },
      { name: 'n_legacy', type: 'Number', default: '' },
      { name: 'b_text', type: 'Boolean', default: 'true' },
      { name: 'b_upper', type: 'Boolean', default: 'False' },
      { name: 'b_bool', type: 'Boolean', default: false },
      { name: 's_number', type: 'String', default: 5 },
      { name: 's_bool', type: 'String', default: true },
      { name: 'l_text', type: 'CommaDelimitedList', default: 'a,b, c' },
      { name: 'l_list', type: 'CommaDelimitedList', default: ['x', 1] },
      { name: 'j_list', type: 'Json', default: [1, { k: 'é' }] },
      { name: 'j_text', type: 'Json', default: '{"k": 1}' },
      { name: 'j_object', type: 'Json', default: { k: [1] } },
      { name: 'untyped', default: [1, 2] },
    ];
    const reply = await post(app, '/software_configs', { name: 'typed', group: 'script', config: 'true', inputs });
    assert.equal(reply.statusCode, 200, reply.body);
    const config = reply.json<{ software_config: Config }>().software_config;
    const expected: Record<string, unknown> = {
      n_text: 5,
      n_float: 2.5,
      n_grouped: 1000,
      n_exp: 1000,
      n_number: 7,
      n_bool: true,
      n_legacy: '',
      b_text: true,
      b_upper: false,
      b_bool: false,
      s_number: '5',
      s_bool: 'True',
      l_text: ['a', 'b', ' c'],
      l_list: ['x', 1],
      j_list: '[1, {"k": "\\u00e9"}]',
      j_text: '{"k": 1}',
      j_object: { k: [1] },
      untyped: [1, 2],
    };
    const defaults = Object.fromEntries(config.inputs.map((i) => [i.name, i.default]));
    assert.deepEqual(defaults, expected);
    assert.deepEqual((await get(app, `/software_configs/${config.id}`)).json<{ software_config: Config }>().software_config, config);

    await createDeployment(app, config.id, 'vm-typed');
    const metadata = await get(app, '/software_deployments/metadata/vm-typed');
    const [entry] = metadata.json<{ metadata: Array<{ inputs: Item[] }> }>().metadata;
    assert.ok(entry);
    const values = Object.fromEntries(entry.inputs.filter((i) => Object.hasOwn(expected, i.name)).map((i) => [i.name, i.value]));
    assert.deepEqual(values, expected, 'the derived config carries the converted defaults');

    const before = await storedConfigs(app);
    for (const [type, value] of [
      ['Number', 'abc'],
      ['Number', 'inf'],
      ['Number', 'nan'],
      ['Number', '0x10'],
      ['Number', '99999999999999999999'],
      ['Number', [1]],
      ['Boolean', 'yes'],
      ['Boolean', 1],
      ['String', 1.5],
      ['String', ['a']],
      ['CommaDelimitedList', 5],
      ['Json', 5],
      ['Json', true],
    ] as const) {
      const bad = await post(app, '/software_configs', { inputs: [{ name: 'i', type, default: value }] });
      assert.equal(bad.statusCode, 400, `${type} ${JSON.stringify(value)}: ${bad.body}`);
      assert.equal(errorCode(bad), 'ERR_CONFIG_INVALID', bad.body);
      assert.match(bad.json<{ error: { message: string } }>().error.message, /input i: default: /);
    }
    assert.deepEqual(await storedConfigs(app), before, 'a refused config stores nothing');
  } finally {
    await done();
  }
});

// Conversion happens when a config is created: a config stored before keeps its defaults as stored.
test('a config stored with unconverted defaults reads and derives as it was stored', async () => {
  const { app, done } = await testApp();
  try {
    const id = randomUUID();
    const inputs = [
      { name: 'n', type: 'Number', default: '5' },
      { name: 'b', type: 'Boolean', default: 'yes' },
      { name: 'l', type: 'CommaDelimitedList', default: 'a,b' },
    ];
    await app.services.store.write(async ({ trx, now }) => {
      await trx
        .insertInto('software_configs')
        .values({
          id,
          project_id: 'default',
          name: 'old',
          group_name: 'script',
          config: JSON.stringify('true'),
          inputs: JSON.stringify(inputs),
          outputs: JSON.stringify([{ name: 'o', type: 'String', error_output: false }]),
          options: '{}',
          created_at: now,
        })
        .execute();
    });
    const shown = await get(app, `/software_configs/${id}`);
    assert.equal(shown.statusCode, 200, shown.body);
    assert.deepEqual(shown.json<{ software_config: Config }>().software_config.inputs, inputs);
    await createDeployment(app, id, 'vm-old');
    const [entry] = (await get(app, '/software_deployments/metadata/vm-old')).json<{ metadata: Array<{ inputs: Item[] }> }>().metadata;
    assert.deepEqual(
      entry?.inputs.slice(0, 3).map((i) => i.value),
      ['5', 'yes', 'a,b'],
    );
  } finally {
    await done();
  }
});

// Heat's API stores `str(status_reason)`, "None" when the body has none; hearth keeps the reason Heat's own
// OS::Heat::SoftwareDeployment sends with every action, which says something to whoever reads it.
test('a deployment created without a status_reason reads "Deploy data available"; a given one is kept', async () => {
  const { app, done } = await testApp();
  try {
    const configId = await createConfig(app);
    const reason = async (extra: Record<string, unknown>) => {
      const reply = await post(app, '/software_deployments', { config_id: configId, server_id: 'vm-r', ...extra });
      assert.equal(reply.statusCode, 200, reply.body);
      const created = reply.json<{ software_deployment: { id: string; status_reason: unknown } }>().software_deployment;
      const shown = (await get(app, `/software_deployments/${created.id}`)).json<{ software_deployment: { status_reason: unknown } }>();
      assert.equal(shown.software_deployment.status_reason, created.status_reason);
      return created.status_reason;
    };
    assert.equal(await reason({}), 'Deploy data available');
    assert.equal(await reason({ status_reason: null, status: 'IN_PROGRESS' }), 'Deploy data available');
    assert.equal(await reason({ status_reason: 'queued' }), 'queued');
    assert.equal(await reason({ status_reason: '' }), '');
    // hearth's NO_SIGNAL completes the deployment itself, and says so.
    assert.equal(await reason({ signal_transport: 'NO_SIGNAL' }), 'Not waiting for outputs signal');
  } finally {
    await done();
  }
});
