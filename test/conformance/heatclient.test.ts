// Debian's python3-heatclient (3.1.0) against hearth-server's native API: what an operator script
// does with `heatclient.client.Client('1', endpoint=..., token=...)` (endpoint + token: no keystone),
// compared with what Heat returns (reference/server.md §3.1–3.4). Each run is one small Python
// program of steps (DRIVER) in the sandbox; it refuses, and reports, any connection other than the
// hearth endpoint.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatErrorMessage } from '@hearth/protocol';
import { startServer, type TestServer } from '../helpers/server.ts';
import { guestMetadata, operatorApi, runClient, SCRATCH, skipUnlessHeatclient } from './clients.ts';

const skip = skipUnlessHeatclient();

/**
 * Runs the steps in order with one client; a step's result is kept under its `as` name, and
 * `{"$ref": "name.key.0"}` anywhere in later arguments is replaced by a part of it. heatclient
 * resources are returned as `to_dict()`; an HTTP error as its class, code, body type and `str()`.
 */
const DRIVER = String.raw`import json, os, socket, sys
from urllib.parse import urlparse

endpoint, token, steps_path = sys.argv[1:4]
allowed = (urlparse(endpoint).hostname, urlparse(endpoint).port)
connects = []
raw_connect = socket.socket.connect


def guarded_connect(self, address):
    connects.append(list(address) if isinstance(address, tuple) else str(address))
    if not isinstance(address, tuple) or (address[0], address[1]) != allowed:
        raise OSError(13, 'refused by the test: only the hearth endpoint may be contacted')
    return raw_connect(self, address)


socket.socket.connect = guarded_connect

from heatclient import client, exc  # noqa: E402
from heatclient.common import deployment_utils  # noqa: E402
from heatclient.common import http  # noqa: E402

assert not [k for k in os.environ if k.startswith('OS_')], 'no OS_* variable may point heatclient elsewhere'
clients = {}


def heat(token):
    if token not in clients:
        clients[token] = client.Client('1', endpoint=endpoint, token=token)
        # endpoint + token: a plain HTTP client, no keystone session, no auth URL.
        assert type(clients[token].http_client) is http.HTTPClient
        assert clients[token].http_client.auth_url is None
    return clients[token]


results = {}


def resolve(value):
    if isinstance(value, dict):
        if set(value) == {'$ref'}:
            name, *path = value['$ref'].split('.')
            found = results[name]
            for part in path:
                found = found[int(part)] if isinstance(found, list) else found[part]
            return found
        return {k: resolve(v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v) for v in value]
    return value


def plain(value):
    if hasattr(value, 'to_dict'):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


out = []
with open(steps_path) as f:
    steps = json.load(f)
for step in steps:
    root, *path = step['call'].split('.')
    target = deployment_utils if root == 'deployment_utils' else heat(step.get('token', token))
    for part in ([root] if root != 'deployment_utils' else []) + path:
        target = getattr(target, part)
    try:
        value = plain(target(*resolve(step.get('args', [])), **resolve(step.get('kwargs', {}))))
        out.append({'ok': value})
        if 'as' in step:
            results[step['as']] = value
    except exc.HTTPException as e:
        body = e.error.get('error', {}) if isinstance(e.error, dict) else {}
        out.append({'error': {'class': type(e).__name__, 'code': e.code, 'type': body.get('type'), 'message': str(e)}})
print(json.dumps({'steps': out, 'connects': connects}))
`;

/** One call of the driver: `call` is `software_configs.create`, `deployment_utils.build_derived_config_params`, ... */
interface Step {
  call?: string;
  as?: string;
  args?: unknown[];
  kwargs?: Record<string, unknown> | { $ref: string };
  /** Another token for this step's client (default the admin token). */
  token?: string;
}

interface HeatError {
  class: string;
  code: number;
  type: string | null;
  message: string;
}

interface Outcome {
  ok?: unknown;
  error?: HeatError;
}

const ref = (path: string) => ({ $ref: path });

/** Runs the steps with heatclient in the sandbox against the server; asserts it contacted nothing but the server. */
async function heatclient(server: TestServer, steps: Step[]): Promise<Outcome[]> {
  const run = await runClient(['python3', `${SCRATCH}/drive.py`, `${server.url}/v1/default`, server.token, `${SCRATCH}/steps.json`], {
    files: { [`${SCRATCH}/drive.py`]: DRIVER, [`${SCRATCH}/steps.json`]: JSON.stringify(steps) },
  });
  assert.equal(run.exitCode, 0, `the heatclient driver failed:\n${run.stderr}`);
  const { steps: outcomes, connects } = JSON.parse(run.stdout) as { steps: Outcome[]; connects: Array<[string, number] | string> };
  assert.equal(outcomes.length, steps.length);
  const port = Number(new URL(server.url).port);
  assert.ok(connects.length > 0, 'heatclient made its requests');
  assert.deepEqual(
    connects.filter((c) => !(Array.isArray(c) && c[0] === '127.0.0.1' && c[1] === port)),
    [],
    'heatclient contacted only the hearth endpoint (no keystone, no catalog)',
  );
  return outcomes;
}

function ok<T = Record<string, unknown>>(outcome: Outcome | undefined, what: string): T {
  assert.ok(outcome, `${what}: no outcome`);
  assert.equal(outcome.error, undefined, `${what}: heatclient raised ${JSON.stringify(outcome.error)}`);
  return outcome.ok as T;
}

function raised(outcome: Outcome | undefined, what: string): HeatError {
  assert.ok(outcome?.error, `${what}: heatclient raised nothing (${JSON.stringify(outcome)})`);
  return outcome.error;
}

/** Heat's isotime: seconds, UTC, `Z`. */
const HEAT_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Heat's format_software_config keys (detail), and those of a list item. */
const CONFIG_KEYS = ['config', 'creation_time', 'group', 'id', 'inputs', 'name', 'options', 'outputs'];
const CONFIG_LIST_KEYS = ['creation_time', 'group', 'id', 'name'];
/** Heat's format_software_deployment keys (`updated_time` only once updated); hearth adds its own beside them. */
const DEPLOYMENT_KEYS = [
  'action',
  'config_id',
  'creation_time',
  'id',
  'input_values',
  'output_values',
  'server_id',
  'status',
  'status_reason',
];

const sortedKeys = (value: unknown) => Object.keys(value as object).sort();

function assertHeatDeployment(deployment: Record<string, unknown>, what: string): void {
  for (const key of DEPLOYMENT_KEYS) assert.ok(Object.hasOwn(deployment, key), `${what}: no ${key} in ${JSON.stringify(deployment)}`);
  assert.match(String(deployment.creation_time), HEAT_TIME);
}

interface DerivedInput {
  name: string;
  type: string;
  value?: unknown;
  default?: unknown;
  description?: string;
}
interface Derived {
  id: string;
  name: string;
  group: string;
  config: unknown;
  inputs: DerivedInput[];
  outputs: unknown[];
}
const inputValue = (entry: Derived, name: string) => entry.inputs.find((i) => i.name === name)?.value;

test('heatclient software_configs: create, get, list with limit and marker, delete; unknown id is HTTPNotFound', { skip }, async () => {
  const server = await startServer();
  try {
    const full = {
      name: 'install',
      group: 'script',
      config: '#!/bin/sh\necho "$foo" > "$heat_outputs_path.result"',
      inputs: [
        { name: 'foo', type: 'String', default: 'x', description: 'what to echo' },
        { name: 'count', type: 'Number', default: 3, replace_on_change: true },
        { name: 'flag', type: 'Boolean', replace_on_change: false },
        { name: 'hosts', type: 'CommaDelimitedList', default: 'a,b' },
        { name: 'doc', type: 'Json', default: { k: [1] } },
      ],
      outputs: [{ name: 'result' }, { name: 'failure', type: 'String', error_output: true, description: 'why' }],
      options: { timeout: 120, debug: true },
    };
    const out = await heatclient(server, [
      { call: 'software_configs.create', as: 'full', kwargs: full },
      { call: 'software_configs.create', as: 'second', kwargs: { name: 'second', group: 'ansible', config: { hosts: 'all' } } },
      { call: 'software_configs.get', args: [ref('full.id')] },
      { call: 'software_configs.list' },
      { call: 'software_configs.list', kwargs: { limit: 1 } },
      { call: 'software_configs.list', kwargs: { limit: 5, marker: ref('second.id') } },
      { call: 'software_configs.delete', args: [ref('second.id')] },
      { call: 'software_configs.get', args: [ref('second.id')] },
      { call: 'software_configs.delete', args: [ref('second.id')] },
      { call: 'software_configs.list' },
    ]);

    // Create: Heat's detail shape, inputs and outputs normalised as Heat stores them (§3.1).
    const created = ok(out[0], 'create');
    assert.deepEqual(sortedKeys(created), CONFIG_KEYS);
    assert.match(String(created.id), UUID);
    assert.match(String(created.creation_time), HEAT_TIME);
    assert.deepEqual(
      { ...created, id: undefined, creation_time: undefined },
      {
        ...full,
        id: undefined,
        creation_time: undefined,
        inputs: [
          { name: 'foo', type: 'String', default: 'x', description: 'what to echo' },
          { name: 'count', type: 'Number', default: 3, replace_on_change: true },
          { name: 'flag', type: 'Boolean' },
          // Heat reads a typed default as its type: a CommaDelimitedList string is split.
          { name: 'hosts', type: 'CommaDelimitedList', default: ['a', 'b'] },
          { name: 'doc', type: 'Json', default: { k: [1] } },
        ],
        outputs: [
          { name: 'result', type: 'String', error_output: false },
          { name: 'failure', type: 'String', error_output: true, description: 'why' },
        ],
      },
    );
    const second = ok(out[1], 'create with an object config');
    assert.deepEqual(second.config, { hosts: 'all' });
    assert.deepEqual([second.inputs, second.outputs, second.options], [[], [], {}], 'missing lists are [] and options {}');

    assert.deepEqual(ok(out[2], 'get'), created, 'get returns the config as created');

    // List: Heat's summary keys only, newest first (Heat sorts by created_at, then id, descending); limit and marker page.
    const listed = ok<Array<Record<string, unknown>>>(out[3], 'list');
    assert.deepEqual(
      listed.map((c) => c.id),
      [second.id, created.id],
    );
    for (const item of listed) assert.deepEqual(sortedKeys(item), CONFIG_LIST_KEYS);
    assert.deepEqual(listed[1], { id: created.id, name: 'install', group: 'script', creation_time: created.creation_time });
    assert.deepEqual(
      ok<Array<{ id: string }>>(out[4], 'list limit=1').map((c) => c.id),
      [second.id],
    );
    assert.deepEqual(
      ok<Array<{ id: string }>>(out[5], 'list after marker').map((c) => c.id),
      [created.id],
    );

    // Delete: 204 (heatclient returns None); then the id is unknown to get and to a second delete.
    assert.equal(ok(out[6], 'delete'), null);
    const message = `ERROR: ${formatErrorMessage('ERR_CONFIG_NOT_FOUND', { id: second.id })}`;
    for (const [index, what] of [
      [7, 'get of a deleted config'],
      [8, 'second delete'],
    ] as const) {
      const error = raised(out[index], what);
      assert.deepEqual(error, { class: 'HTTPNotFound', code: 404, type: 'ERR_CONFIG_NOT_FOUND', message });
    }
    assert.deepEqual(
      ok<Array<{ id: string }>>(out[9], 'list after delete').map((c) => c.id),
      [created.id],
    );
  } finally {
    await server.close();
  }
});

test(
  'heatclient software_deployments: create, get, list by server, metadata, update, delete; a config in use is HTTPConflict',
  { skip },
  async () => {
    const server = await startServer();
    try {
      const api = operatorApi(server);
      const vm1 = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_HEAT' });
      const vm2 = await api.createServer({ name: 'vm2', software_config_transport: 'POLL_SERVER_HEAT' });
      const [vm1Id, vm2Id] = [vm1.server.id, vm2.server.id];
      const app = {
        name: 'zz-app',
        group: 'script',
        config: '#!/bin/sh\necho "$foo"',
        inputs: [
          { name: 'foo', default: 'x' },
          { name: 'n', type: 'Number' },
        ],
        outputs: [{ name: 'result' }],
        options: { o: 1 },
      };
      const created = await heatclient(server, [
        { call: 'software_configs.create', as: 'app', kwargs: app },
        { call: 'software_configs.create', as: 'base', kwargs: { name: 'aa-base', group: 'script', config: 'echo base' } },
        {
          call: 'software_deployments.create',
          as: 'dApp',
          kwargs: {
            config_id: ref('app.id'),
            server_id: vm1Id,
            action: 'CREATE',
            status: 'IN_PROGRESS',
            input_values: { foo: 'bar', extra: 7 },
            signal_transport: 'CFN_SIGNAL',
          },
        },
        {
          call: 'software_deployments.create',
          as: 'dBase',
          kwargs: { config_id: ref('base.id'), server_id: vm1Id, action: 'CREATE', status: 'IN_PROGRESS', status_reason: 'queued' },
        },
        { call: 'software_deployments.create', as: 'dOther', kwargs: { config_id: ref('base.id'), server_id: vm2Id } },
        { call: 'software_deployments.get', args: [ref('dApp.id')] },
        { call: 'software_deployments.list', kwargs: { server_id: vm1Id } },
        { call: 'software_deployments.list', kwargs: { server_id: vm2Id } },
        { call: 'software_deployments.list' },
        { call: 'software_deployments.metadata', kwargs: { server_id: vm1Id } },
      ]);
      const appConfig = ok(created[0], 'create config');
      const dApp = ok(created[2], 'create deployment');
      const dBase = ok(created[3], 'create deployment with a status_reason');
      const dOther = ok(created[4], 'create deployment with only config_id and server_id');
      assertHeatDeployment(dApp, 'create');
      assert.deepEqual(
        {
          config_id: dApp.config_id,
          server_id: dApp.server_id,
          action: dApp.action,
          status: dApp.status,
          input_values: dApp.input_values,
          output_values: dApp.output_values,
          signal_transport: dApp.signal_transport,
        },
        {
          config_id: appConfig.id,
          server_id: vm1Id,
          action: 'CREATE',
          status: 'IN_PROGRESS',
          input_values: { foo: 'bar', extra: 7 },
          output_values: null,
          signal_transport: 'CFN_SIGNAL',
        },
      );
      assert.equal(dApp.updated_time, undefined, 'no updated_time until the first update (Heat)');
      assert.equal(dBase.status_reason, 'queued', 'a given status_reason is stored as given');
      assert.deepEqual(ok(created[5], 'get'), dApp, 'get returns the deployment as created');

      // List: ?server_id= filters (Heat's only filter); without it, all of the project's.
      const byServer = (index: number) => ok<Array<Record<string, unknown>>>(created[index], 'list').map((d) => d.id);
      assert.deepEqual(new Set(byServer(6)), new Set([dApp.id, dBase.id]));
      assert.deepEqual(byServer(7), [dOther.id]);
      assert.deepEqual(new Set(byServer(8)), new Set([dApp.id, dBase.id, dOther.id]));
      for (const d of ok<Array<Record<string, unknown>>>(created[6], 'list')) assertHeatDeployment(d, 'list item');

      // metadata(server_id): Heat's list of derived configs, sorted by config name (§2.3, §3.4), the
      // same list the server's agent reads under `deployments`.
      const metadata = ok<Derived[]>(created[9], 'metadata');
      assert.ok(Array.isArray(metadata), 'metadata is a list');
      assert.deepEqual(
        metadata.map((e) => e.name),
        ['aa-base', 'zz-app'],
      );
      for (const entry of metadata) assert.deepEqual(sortedKeys(entry), CONFIG_KEYS);
      const appEntry = metadata[1]!;
      assert.notEqual(appEntry.id, appConfig.id, 'an entry is a derived config with its own id');
      assert.equal(appEntry.id, dApp.derived_config_id);
      assert.deepEqual([appEntry.group, appEntry.config, appEntry.outputs], [app.group, app.config, appConfig.outputs]);
      assert.deepEqual(appEntry.inputs.slice(0, 3), [
        { name: 'foo', type: 'String', default: 'x', value: 'bar' },
        { name: 'n', type: 'Number', value: null },
        { name: 'extra', type: 'String', value: 7 },
      ]);
      assert.equal(inputValue(appEntry, 'deploy_server_id'), vm1Id);
      assert.equal(inputValue(appEntry, 'deploy_action'), 'CREATE');
      assert.equal(inputValue(appEntry, 'deploy_signal_transport'), 'CFN_SIGNAL');
      assert.equal(inputValue(appEntry, 'deploy_signal_verb'), 'POST');
      assert.match(String(inputValue(appEntry, 'deploy_signal_id')), /^http:\/\/127\.0\.0\.1:\d+\/v1\/signal\//);
      const agentView = await guestMetadata(server, vm1);
      assert.deepEqual(metadata, agentView.deployments, 'metadata(server_id) is the list the server’s agent reads');

      const later = await heatclient(server, [
        {
          call: 'software_deployments.update',
          args: [dApp.id],
          kwargs: {
            status: 'COMPLETE',
            status_reason: 'Outputs received',
            output_values: { deploy_stdout: 'bar\n', deploy_stderr: '', deploy_status_code: 0, result: 'r' },
          },
        },
        { call: 'software_deployments.update', args: [dBase.id], kwargs: { action: 'UPDATE' } },
        { call: 'software_deployments.get', args: [dBase.id] },
        { call: 'software_deployments.metadata', kwargs: { server_id: vm1Id } },
        { call: 'software_configs.delete', args: [appConfig.id] },
        { call: 'software_configs.get', args: [appConfig.id] },
        { call: 'software_deployments.delete', args: [dApp.id] },
        { call: 'software_deployments.get', args: [dApp.id] },
        { call: 'software_configs.delete', args: [appConfig.id] },
        { call: 'software_deployments.metadata', kwargs: { server_id: vm1Id } },
        { call: 'software_deployments.list', kwargs: { server_id: vm1Id } },
      ]);
      // Update: the given status, reason and outputs are stored as given (§2.4), updated_time appears.
      const done = ok(later[0], 'update status');
      assertHeatDeployment(done, 'update');
      assert.deepEqual(
        [done.status, done.status_reason, done.output_values, done.action],
        ['COMPLETE', 'Outputs received', { deploy_stdout: 'bar\n', deploy_stderr: '', deploy_status_code: 0, result: 'r' }, 'CREATE'],
      );
      assert.match(String(done.updated_time), HEAT_TIME);
      // A new action reaches the server as a new derived config with deploy_action UPDATE.
      const updated = ok(later[1], 'update action');
      assert.equal(updated.action, 'UPDATE');
      assert.deepEqual(ok(later[2], 'get after update'), updated);
      const baseEntry = ok<Derived[]>(later[3], 'metadata after update').find((e) => e.name === 'aa-base');
      assert.ok(baseEntry);
      assert.equal(baseEntry.id, updated.derived_config_id);
      assert.notEqual(baseEntry.id, dBase.derived_config_id);
      assert.equal(inputValue(baseEntry, 'deploy_action'), 'UPDATE');

      // A config a deployment uses cannot be deleted: HTTPConflict with hearth's message; it stays.
      assert.deepEqual(raised(later[4], 'delete of a config in use'), {
        class: 'HTTPConflict',
        code: 409,
        type: 'ERR_CONFIG_IN_USE',
        message: `ERROR: ${formatErrorMessage('ERR_CONFIG_IN_USE', { id: appConfig.id, count: 1 })}`,
      });
      assert.deepEqual(ok(later[5], 'get of the config in use'), appConfig);
      // Delete: 204; then the deployment is gone, its config deletable, its entry out of the metadata.
      assert.equal(ok(later[6], 'delete deployment'), null);
      assert.deepEqual(raised(later[7], 'get of a deleted deployment'), {
        class: 'HTTPNotFound',
        code: 404,
        type: 'ERR_DEPLOYMENT_NOT_FOUND',
        message: `ERROR: ${formatErrorMessage('ERR_DEPLOYMENT_NOT_FOUND', { id: dApp.id })}`,
      });
      assert.equal(ok(later[8], 'delete of the config no longer used'), null);
      assert.deepEqual(
        ok<Derived[]>(later[9], 'metadata after delete').map((e) => e.name),
        ['aa-base'],
      );
      assert.deepEqual(
        ok<Array<{ id: string }>>(later[10], 'list after delete').map((d) => d.id),
        [dBase.id],
      );
    } finally {
      await server.close();
    }
  },
);

test(
  'heatclient errors: a bad token is HTTPUnauthorized, bad input HTTPBadRequest, an id that is not a UUID HTTPNotFound, each with hearth’s coded message',
  { skip },
  async () => {
    const server = await startServer();
    try {
      const vm = await operatorApi(server).createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_HEAT' });
      const unknown = '00000000-0000-4000-8000-000000000000';
      const out = await heatclient(server, [
        { call: 'software_configs.list', token: 'not-the-admin-token' },
        { call: 'software_configs.create', kwargs: { name: 'bad', inputs: [{ name: 'a', type: 'Bogus' }] } },
        { call: 'software_configs.create', kwargs: { name: 'bad', inputs: [{ name: 'n', type: 'Number', default: 'abc' }] } },
        { call: 'software_configs.create', kwargs: { name: 'bad', inputs: 'not-a-list' } },
        { call: 'software_configs.get', args: ['not-a-uuid'] },
        { call: 'software_deployments.create', kwargs: { config_id: unknown, server_id: vm.server.id } },
        { call: 'software_deployments.create', kwargs: { config_id: 'not-a-uuid', server_id: vm.server.id } },
        { call: 'software_deployments.update', args: [unknown], kwargs: { status: 'COMPLETE' } },
        { call: 'software_configs.list' },
        { call: 'software_deployments.list' },
        { call: 'software_deployments.delete', args: ['not-a-uuid'] },
        // Parameters Heat does not know are ignored, as Heat's whitelists do; any server id filters.
        { call: 'software_configs.list', kwargs: { global_tenant: true, sort_dir: 'asc' } },
        { call: 'software_deployments.metadata', args: ['not a server'] },
        { call: 'software_deployments.list', kwargs: { server_id: 'not a server', show_deleted: true } },
      ]);

      // heatclient turns any 401 into "Authentication failed: <body>": the body carries hearth's code and message.
      const unauthorized = raised(out[0], 'bad token');
      assert.equal(unauthorized.class, 'HTTPUnauthorized');
      assert.equal(unauthorized.code, 401);
      assert.ok(unauthorized.message.startsWith('ERROR: Authentication failed: '), unauthorized.message);
      assert.ok(unauthorized.message.includes('ERR_AUTH_INVALID'), unauthorized.message);
      assert.ok(unauthorized.message.includes(formatErrorMessage('ERR_AUTH_INVALID')), unauthorized.message);

      const badRequest = (index: number, type: string, message: RegExp) => {
        const error = raised(out[index], `step ${index}`);
        assert.deepEqual([error.class, error.code, error.type], ['HTTPBadRequest', 400, type], JSON.stringify(error));
        assert.match(error.message, message);
      };
      badRequest(1, 'ERR_REQUEST_INVALID', /^ERROR: The request is not valid: body\/inputs\/0\/type must be one of "String", .*\.$/);
      badRequest(2, 'ERR_CONFIG_INVALID', /^ERROR: The software config is not valid: input n: default: .*Number.*\.$/);
      badRequest(3, 'ERR_REQUEST_INVALID', /^ERROR: The request is not valid: body\/inputs must be array/);
      // As Heat: an id that is not a UUID is one that does not exist (scripts catch HTTPNotFound).
      assert.deepEqual(raised(out[4], 'get of a config id that is not a UUID'), {
        class: 'HTTPNotFound',
        code: 404,
        type: 'ERR_CONFIG_NOT_FOUND',
        message: `ERROR: ${formatErrorMessage('ERR_CONFIG_NOT_FOUND', { id: 'not-a-uuid' })}`,
      });
      assert.deepEqual(raised(out[5], 'deployment of an unknown config'), {
        class: 'HTTPNotFound',
        code: 404,
        type: 'ERR_CONFIG_NOT_FOUND',
        message: `ERROR: ${formatErrorMessage('ERR_CONFIG_NOT_FOUND', { id: unknown })}`,
      });
      badRequest(6, 'ERR_REQUEST_INVALID', /^ERROR: The request is not valid: body\/config_id /);
      assert.equal(raised(out[7], 'update of an unknown deployment').class, 'HTTPNotFound');
      // Refused input stored nothing.
      assert.deepEqual([ok(out[8], 'configs'), ok(out[9], 'deployments')], [[], []]);
      assert.deepEqual(raised(out[10], 'delete of a deployment id that is not a UUID'), {
        class: 'HTTPNotFound',
        code: 404,
        type: 'ERR_DEPLOYMENT_NOT_FOUND',
        message: `ERROR: ${formatErrorMessage('ERR_DEPLOYMENT_NOT_FOUND', { id: 'not-a-uuid' })}`,
      });
      assert.deepEqual([ok(out[11], 'configs, unknown parameters'), ok(out[12], 'metadata'), ok(out[13], 'deployments')], [[], [], []]);
    } finally {
      await server.close();
    }
  },
);

/** `openstack software deployment create` (heatclient/osc): derive the config client-side, then deploy it. */
async function oscDeploymentCreate(server: TestServer, serverId: string) {
  return heatclient(server, [
    {
      call: 'software_configs.create',
      as: 'source',
      kwargs: { name: 'src', group: 'script', config: 'echo', inputs: [{ name: 'foo', default: 'x' }], outputs: [{ name: 'result' }] },
    },
    {
      call: 'deployment_utils.build_derived_config_params',
      as: 'params',
      args: ['UPDATE', ref('source'), 'mydeploy', { foo: 'bar', other: 'o' }, serverId, 'NO_SIGNAL'],
    },
    { call: 'software_configs.create', as: 'derived', kwargs: ref('params') },
    {
      call: 'software_deployments.create',
      kwargs: { config_id: ref('derived.id'), server_id: serverId, action: 'UPDATE', status: 'IN_PROGRESS' },
    },
    { call: 'software_deployments.metadata', kwargs: { server_id: serverId } },
  ]);
}

test(
  'heatclient osc flow: a config derived by deployment_utils is stored as sent and deployed once per deploy_* input',
  { skip },
  async () => {
    const server = await startServer();
    try {
      const vm = await operatorApi(server).createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_HEAT' });
      const out = await oscDeploymentCreate(server, vm.server.id);
      const params = ok<{ inputs: DerivedInput[] }>(out[1], 'build_derived_config_params');
      const derived = ok<Derived>(out[2], 'create of the derived config');
      assert.equal(derived.name, 'mydeploy');
      assert.deepEqual(
        derived.inputs.map((i) => [i.name, i.value]),
        params.inputs.map((i) => [i.name, i.value]),
        'the inputs with their values, as heatclient sent them',
      );
      const deployment = ok(out[3], 'create deployment');
      assertHeatDeployment(deployment, 'create');
      assert.deepEqual([deployment.status, deployment.action], ['IN_PROGRESS', 'UPDATE']);
      const [entry, ...rest] = ok<Derived[]>(out[4], 'metadata');
      assert.ok(entry);
      assert.deepEqual(rest, []);
      assert.equal(entry.name, 'mydeploy');
      const names = entry.inputs.map((i) => i.name);
      assert.deepEqual(names, [...new Set(names)], 'each deploy_* input once, the config’s own given its value');
      assert.equal(inputValue(entry, 'deploy_server_id'), vm.server.id);
      assert.equal(inputValue(entry, 'deploy_action'), 'UPDATE');
      assert.equal(inputValue(entry, 'other'), 'o');
    } finally {
      await server.close();
    }
  },
);

// Heat delivers an API-created config as stored, so `--input-value foo=bar` reaches the hook as
// `bar`, not the input's default `x`.
test('heatclient osc flow: an input value given to `software deployment create` reaches the server', { skip }, async () => {
  const server = await startServer();
  try {
    const vm = await operatorApi(server).createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_HEAT' });
    const out = await oscDeploymentCreate(server, vm.server.id);
    const [entry] = ok<Derived[]>(out[4], 'metadata');
    assert.ok(entry);
    assert.equal(inputValue(entry, 'foo'), 'bar');
  } finally {
    await server.close();
  }
});

// What Heat does with values heatclient users send as text or leave out (heat/engine/software_config_io.py,
// service_software_config.py): a big list limit lists everything, "true" is a boolean item key, a
// typed default is stored (and reaches the server) as its type. A deployment created without a
// status_reason reads "Deploy data available", the reason Heat's own resource sends (Heat's API would store "None").
test(
  'heatclient: a big list limit, string booleans, typed defaults and a missing status_reason, as Heat takes them',
  { skip },
  async () => {
    const server = await startServer();
    try {
      const vm = await operatorApi(server).createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_HEAT' });
      const out = await heatclient(server, [
        {
          call: 'software_configs.create',
          as: 'typed',
          kwargs: {
            name: 'typed',
            group: 'script',
            config: 'true',
            inputs: [
              { name: 'count', type: 'Number', default: '5' },
              { name: 'flag', type: 'Boolean', default: 'true', replace_on_change: 'True' },
            ],
            outputs: [{ name: 'failure', error_output: 'true' }],
          },
        },
        { call: 'software_configs.create', as: 'other', kwargs: { name: 'other', config: 'true' } },
        { call: 'software_configs.list', kwargs: { limit: 5000 } },
        { call: 'software_configs.list', kwargs: { limit: 5000, marker: ref('other.id') } },
        { call: 'software_deployments.create', as: 'deployment', kwargs: { config_id: ref('typed.id'), server_id: vm.server.id } },
        { call: 'software_deployments.get', args: [ref('deployment.id')] },
        { call: 'software_deployments.metadata', kwargs: { server_id: vm.server.id } },
        { call: 'software_configs.create', kwargs: { name: 'bad', outputs: [{ name: 'o', error_output: 'yes' }] } },
      ]);
      const typed = ok<Derived>(out[0], 'create with typed defaults');
      assert.deepEqual(typed.inputs, [
        { name: 'count', type: 'Number', default: 5 },
        { name: 'flag', type: 'Boolean', default: true, replace_on_change: true },
      ]);
      assert.deepEqual(typed.outputs, [{ name: 'failure', type: 'String', error_output: true }]);
      const other = ok<{ id: string }>(out[1], 'create');
      assert.deepEqual(
        ok<Array<{ id: string }>>(out[2], 'list limit=5000').map((c) => c.id),
        [other.id, typed.id],
      );
      assert.deepEqual(
        ok<Array<{ id: string }>>(out[3], 'list limit=5000 after a marker').map((c) => c.id),
        [typed.id],
      );
      const deployment = ok(out[4], 'create deployment without status_reason');
      assert.equal(deployment.status_reason, 'Deploy data available');
      assert.deepEqual(ok(out[5], 'get'), deployment);
      const [entry] = ok<Derived[]>(out[6], 'metadata');
      assert.ok(entry);
      assert.deepEqual([inputValue(entry, 'count'), inputValue(entry, 'flag')], [5, true]);
      const refused = raised(out[7], 'error_output "yes"');
      assert.deepEqual([refused.class, refused.code, refused.type], ['HTTPBadRequest', 400, 'ERR_CONFIG_INVALID']);
      assert.match(refused.message, /output o: error_output: "yes" is not a valid boolean/);
    } finally {
      await server.close();
    }
  },
);
