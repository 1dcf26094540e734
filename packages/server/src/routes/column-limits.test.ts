import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { signV2 } from '@hearth/protocol/signing';
import { ADMIN, createConfig, createDeployment, injectUrl, registerServer, testApp } from '../test-support.ts';

// Every varchar(n) column a client can fill, through every route that fills it: a value exactly at
// the limit is stored as sent; one character more is a 400 with a code and stores nothing. SQLite
// ignores n and PostgreSQL refuses a longer value (SQLSTATE 22001), so only the API's own checks
// make the two stores answer alike; this file runs in both passes of the suite.

const HOST = '127.0.0.1:8003';
const STACK = '/v1/default/stacks/limits';
const ACTUATOR = { url: 'http://127.0.0.1:9/actuator' };

let app: FastifyInstance;
let done: () => Promise<void>;
/** What the cases write through (made in `before`, with stack `limits`, its scaling group `pool` and server `m…m`). */
let fixtures: {
  agent: { authorization: string };
  accessKeyId: string;
  secret: string;
  configId: string;
  deploymentId: string;
  handle: { endpoint: string; token: string; cfn_url: string };
};

before(async () => {
  ({ app, done } = await testApp());
  const post = async (url: string, payload: object) => {
    const reply = await app.inject({ method: 'POST', url, headers: ADMIN, payload });
    assert.ok(reply.statusCode < 300, reply.body);
    return reply;
  };
  await post('/v1/default/stacks', { stack_name: 'limits' });
  const vm = await registerServer(app);
  const configId = await createConfig(app);
  const condition = await post(`${STACK}/wait_conditions`, { name: 'handle', count: 100, timeout: 3600 });
  await post(`${STACK}/scaling_groups`, { name: 'pool', min_size: 0, max_size: 1, actuator: ACTUATOR });
  await post('/v1/default/servers', { name: 'member', id: 'm'.repeat(64) });
  const [accessKeyId = '', secret = ''] = vm.token.split(':');
  fixtures = {
    agent: vm.auth,
    accessKeyId,
    secret,
    configId,
    deploymentId: await createDeployment(app, configId, vm.id),
    handle: condition.json<{ wait_condition: { handle: { endpoint: string; token: string; cfn_url: string } } }>().wait_condition.handle,
  };
});

after(async () => {
  await done();
});

/** A client-writable column, its limit and one route that fills it. */
interface Limit {
  table: string;
  column: string;
  /** Most characters the API takes: the column's n, or less where hearth stores the value with a prefix. */
  limit: number;
  /** The route and field that fill the column. */
  via: string;
  /** The refusal's error code. */
  code: string;
  /** A valid value of `length` characters. */
  value: (length: number) => string;
  send: (value: string) => Promise<LightMyRequestResponse>;
  /** The value as the column holds it (default: as sent). */
  stored?: (value: string) => string;
}

const fill = (character: string) => (length: number) => character.repeat(length);
const admin = (url: string, payload: object) => app.inject({ method: 'POST', url, headers: ADMIN, payload });
const guestMetrics = (payload: object) => app.inject({ method: 'POST', url: '/v1/guest/metrics', headers: fixtures.agent, payload });
const alarm = (fields: Record<string, string>) =>
  admin('/v1/default/alarms', {
    name: `alarm-${Object.keys(fields).join()}-${Object.values(fields)[0]?.length}`,
    metric_name: 'CPUUtilization',
    statistic: 'Average',
    period: 60,
    threshold: 80,
    comparison_operator: 'GreaterThanThreshold',
    ...fields,
  });

/** PutMetricData as cfn-push-stats sends it: a form signed (v2) with the agent's credential. */
function putMetricData(fields: Record<string, string>): Promise<LightMyRequestResponse> {
  const params: Record<string, string> = {
    Action: 'PutMetricData',
    Version: '2010-08-01',
    AWSAccessKeyId: fixtures.accessKeyId,
    SignatureVersion: '2',
    SignatureMethod: 'HmacSHA256',
    Timestamp: new Date().toISOString(),
    'MetricData.member.1.MetricName': 'MemoryUtilization',
    'MetricData.member.1.Value': '1',
    ...fields,
  };
  params.Signature = signV2(fixtures.secret, 'sha256', 'POST', HOST, '/v1/', params);
  return app.inject({
    method: 'POST',
    url: '/v1/',
    headers: { host: HOST, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(params).toString(),
  });
}

const LIMITS: Limit[] = [
  {
    table: 'servers',
    column: 'id',
    limit: 64,
    via: 'POST /servers id',
    code: 'ERR_REQUEST_INVALID',
    value: fill('i'),
    send: (id) => admin('/v1/default/servers', { name: 'by-id', id }),
  },
  // Characters, not bytes or UTF-16 units: 255 four-byte characters fit.
  {
    table: 'servers',
    column: 'name',
    limit: 255,
    via: 'POST /servers name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('🔥'),
    send: (name) => admin('/v1/default/servers', { name }),
  },
  {
    table: 'servers',
    column: 'resource_name',
    limit: 255,
    via: 'POST /servers resource_name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('r'),
    send: (resource_name) => admin('/v1/default/servers', { name: 'in-stack', stack: 'limits', resource_name }),
  },
  {
    table: 'stacks',
    column: 'name',
    limit: 255,
    via: 'POST /stacks stack_name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('s'),
    send: (stack_name) => admin('/v1/default/stacks', { stack_name }),
  },
  {
    table: 'software_configs',
    column: 'name',
    limit: 255,
    via: 'POST /software_configs name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('c'),
    send: (name) => admin('/v1/default/software_configs', { name, group: 'script' }),
  },
  {
    table: 'software_configs',
    column: 'group_name',
    limit: 255,
    via: 'POST /software_configs group',
    code: 'ERR_REQUEST_INVALID',
    value: fill('g'),
    send: (group) => admin('/v1/default/software_configs', { name: 'grouped', group }),
  },
  {
    table: 'software_deployments',
    column: 'server_id',
    limit: 64,
    via: 'POST /software_deployments server_id',
    code: 'ERR_REQUEST_INVALID',
    value: fill('v'),
    send: (server_id) => admin('/v1/default/software_deployments', { config_id: fixtures.configId, server_id }),
  },
  {
    table: 'software_deployments',
    column: 'name',
    limit: 255,
    via: 'POST /software_deployments name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('n'),
    send: (name) => admin('/v1/default/software_deployments', { config_id: fixtures.configId, server_id: 'vm', name }),
  },
  {
    table: 'software_deployments',
    column: 'resource_name',
    limit: 255,
    via: 'POST /software_deployments resource_name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('d'),
    send: (resource_name) =>
      admin('/v1/default/software_deployments', { config_id: fixtures.configId, server_id: 'vm', stack: 'limits', resource_name }),
  },
  // The key is stored as `client:<key>`: 7 + 120 of the column's 128.
  {
    table: 'signals',
    column: 'idempotency_key',
    limit: 120,
    via: 'the Idempotency-Key header of a deployment signal',
    code: 'ERR_REQUEST_INVALID',
    value: fill('k'),
    stored: (key) => `client:${key}`,
    send: (key) =>
      app.inject({
        method: 'POST',
        url: `/v1/guest/deployments/${fixtures.deploymentId}/signal`,
        headers: { ...fixtures.agent, 'idempotency-key': key },
        payload: { deploy_status_code: 0 },
      }),
  },
  {
    table: 'wait_conditions',
    column: 'name',
    limit: 255,
    via: 'POST /stacks/{s}/wait_conditions name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('w'),
    send: (name) => admin(`${STACK}/wait_conditions`, { name, timeout: 60 }),
  },
  {
    table: 'wait_condition_signals',
    column: 'signal_id',
    limit: 255,
    via: 'the id of a Heat handle signal',
    code: 'ERR_SIGNAL_INVALID',
    value: fill('h'),
    send: (id) => injectUrl(app, 'POST', fixtures.handle.endpoint, { status: 'SUCCESS', id }, { 'x-auth-token': fixtures.handle.token }),
  },
  {
    table: 'wait_condition_signals',
    column: 'signal_id',
    limit: 255,
    via: 'the UniqueId of a CFN handle signal (cfn-signal)',
    code: 'ERR_SIGNAL_INVALID',
    value: fill('u'),
    send: (UniqueId) => injectUrl(app, 'PUT', fixtures.handle.cfn_url, { Status: 'SUCCESS', Reason: 'up', UniqueId, Data: '' }),
  },
  {
    table: 'scaling_groups',
    column: 'name',
    limit: 255,
    via: 'POST /stacks/{s}/scaling_groups name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('G'),
    send: (name) => admin(`${STACK}/scaling_groups`, { name, min_size: 0, max_size: 1, actuator: ACTUATOR }),
  },
  {
    table: 'scaling_members',
    column: 'server_id',
    limit: 64,
    via: 'POST /scaling_groups/{g}/members add',
    code: 'ERR_REQUEST_INVALID',
    value: fill('m'),
    send: (id) => admin(`${STACK}/scaling_groups/pool/members`, { add: [id] }),
  },
  {
    table: 'scaling_policies',
    column: 'name',
    limit: 255,
    via: 'POST /stacks/{s}/scaling_policies name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('p'),
    send: (name) =>
      admin(`${STACK}/scaling_policies`, { name, group: 'pool', adjustment_type: 'change_in_capacity', scaling_adjustment: 1 }),
  },
  {
    table: 'metric_samples',
    column: 'namespace',
    limit: 255,
    via: 'POST /v1/guest/metrics namespace',
    code: 'ERR_REQUEST_INVALID',
    value: fill('N'),
    send: (namespace) => guestMetrics({ namespace, samples: [{ metric_name: 'Load', value: 1 }] }),
  },
  {
    table: 'metric_samples',
    column: 'metric_name',
    limit: 255,
    via: 'POST /v1/guest/metrics metric_name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('M'),
    send: (metric_name) => guestMetrics({ samples: [{ metric_name, value: 1 }] }),
  },
  {
    table: 'metric_samples',
    column: 'unit',
    limit: 64,
    via: 'POST /v1/guest/metrics unit',
    code: 'ERR_REQUEST_INVALID',
    value: fill('U'),
    send: (unit) => guestMetrics({ samples: [{ metric_name: 'Load', value: 1, unit }] }),
  },
  {
    table: 'metric_samples',
    column: 'namespace',
    limit: 255,
    via: 'PutMetricData Namespace',
    code: 'ERR_METRIC_INVALID',
    value: fill('x'),
    send: (Namespace) => putMetricData({ Namespace }),
  },
  {
    table: 'metric_samples',
    column: 'metric_name',
    limit: 255,
    via: 'PutMetricData MetricName',
    code: 'ERR_METRIC_INVALID',
    value: fill('y'),
    send: (name) => putMetricData({ 'MetricData.member.1.MetricName': name }),
  },
  {
    table: 'metric_samples',
    column: 'unit',
    limit: 64,
    via: 'PutMetricData Unit',
    code: 'ERR_METRIC_INVALID',
    value: fill('z'),
    send: (unit) => putMetricData({ 'MetricData.member.1.Unit': unit }),
  },
  {
    table: 'alarms',
    column: 'name',
    limit: 255,
    via: 'POST /alarms name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('a'),
    send: (name) => alarm({ name }),
  },
  {
    table: 'alarms',
    column: 'namespace',
    limit: 255,
    via: 'POST /alarms namespace',
    code: 'ERR_REQUEST_INVALID',
    value: fill('A'),
    send: (namespace) => alarm({ namespace }),
  },
  {
    table: 'alarms',
    column: 'metric_name',
    limit: 255,
    via: 'POST /alarms metric_name',
    code: 'ERR_REQUEST_INVALID',
    value: fill('b'),
    send: (metric_name) => alarm({ metric_name }),
  },
];

/** Every value of a column, read from the store. */
async function columnValues(table: string, column: string): Promise<string[]> {
  const result = await sql<{ value: string }>`select ${sql.ref(column)} as value from ${sql.table(table)}`.execute(
    app.services.store.reader,
  );
  return result.rows.map((row) => row.value);
}

/** The code of a refusal: `error.code` of a JSON body, or the `(ERR_...)` a CFN error message ends with. */
function codeOf(reply: LightMyRequestResponse): string | undefined {
  if (String(reply.headers['content-type']).includes('json')) return reply.json<{ error?: { code?: string } }>().error?.code;
  return /\((ERR_[A-Z_]+)\)/.exec(reply.body)?.[1];
}

for (const c of LIMITS) {
  test(`${c.table}.${c.column} via ${c.via}: ${c.limit} characters are stored, ${c.limit + 1} are a 400 ${c.code}`, async () => {
    const before = await columnValues(c.table, c.column);
    const over = await c.send(c.value(c.limit + 1));
    assert.equal(over.statusCode, 400, over.body);
    assert.equal(codeOf(over), c.code, over.body);
    assert.equal((await columnValues(c.table, c.column)).length, before.length, 'nothing was stored');
    const atLimit = c.value(c.limit);
    const accepted = await c.send(atLimit);
    assert.ok(accepted.statusCode >= 200 && accepted.statusCode < 300, `${accepted.statusCode} ${accepted.body}`);
    const stored = await columnValues(c.table, c.column);
    assert.equal(stored.length, before.length + 1);
    assert.ok(stored.includes(c.stored ? c.stored(atLimit) : atLimit), 'stored as sent, not cut');
  });
}

test('member_bootstrap names a new member after its group, cut to fit the 255 characters of a server and resource name', async () => {
  const group = 'B'.repeat(255);
  const created = await admin(`${STACK}/scaling_groups`, {
    name: group,
    min_size: 1,
    max_size: 1,
    actuator: ACTUATOR,
    member_bootstrap: {},
  });
  assert.equal(created.statusCode, 201, created.body);
  const [member] = created.json<{ scaling_group: { members: Array<{ server_id: string }> } }>().scaling_group.members;
  assert.ok(member, 'the initial capacity created a member');
  const server = (await app.inject({ url: `/v1/default/servers/${member.server_id}`, headers: ADMIN })).json<{
    server: { name: string; resource_name: string };
  }>().server;
  assert.match(server.name, /^B{246}-[0-9a-f]{8}$/);
  assert.equal(server.resource_name, server.name);
});

test('dimension names and values (JSON in a text column) hold 255 characters on the JSON route, as on PutMetricData', async () => {
  const put = (name: string, value: string) =>
    guestMetrics({ samples: [{ metric_name: 'Dimensioned', value: 1, dimensions: { [name]: value } }] });
  for (const [name, value] of [
    ['D'.repeat(256), 'v'],
    ['D', 'V'.repeat(256)],
  ] as const) {
    const refused = await put(name, value);
    assert.equal(refused.statusCode, 400, refused.body);
    assert.equal(codeOf(refused), 'ERR_REQUEST_INVALID');
  }
  assert.equal((await put('D'.repeat(255), 'V'.repeat(255))).statusCode, 200);
  const listed = await app.inject({ url: '/v1/default/metrics?metric_name=Dimensioned', headers: ADMIN });
  assert.deepEqual(
    listed.json<{ samples: Array<{ dimensions: Record<string, string> }> }>().samples.map((s) => s.dimensions),
    [{ ['D'.repeat(255)]: 'V'.repeat(255) }],
  );
});
