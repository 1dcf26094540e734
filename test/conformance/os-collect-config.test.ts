// Debian's os-collect-config (python3-os-collect-config 12) against hearth-server, one test per
// Heat transport: collector `cfn` (POLL_SERVER_CFN), `heat` (POLL_SERVER_HEAT), `request`
// (POLL_TEMP_URL). Each runs the collector from flags and from the server's generated
// os-collect-config.conf, then with a wrong secret, which must fetch nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, type TestServer } from '../helpers/server.ts';
import { assertOnlyDeployment, guestMetadata, operatorApi, runClient, SCRIPT, skipUnlessClients, type CreatedServer } from './clients.ts';

const skip = skipUnlessClients();

type Collector = 'cfn' | 'heat' | 'request';

/** Collects once with only `collector`, caches in the run's scratch dir, and parses the printed JSON (stderr beside it). */
async function collect(
  collector: Collector,
  args: string[],
  files: Record<string, string> = {},
): Promise<{ printed: Record<string, unknown>; stderr: string }> {
  const run = await runClient(
    ['os-collect-config', '--print', '--cachedir', '@SCRATCH@/cache', '--backup-cachedir', '@SCRATCH@/backup', ...args, collector],
    { files },
  );
  assert.equal(run.exitCode, 0, `os-collect-config ${collector} failed:\n${run.stderr}`);
  try {
    return { printed: JSON.parse(run.stdout) as Record<string, unknown>, stderr: run.stderr };
  } catch {
    throw new Error(`os-collect-config ${collector} printed no JSON:\n${run.stdout}\n${run.stderr}`);
  }
}

/** The collector section of the server's reply, with the keys Heat writes for that transport. */
function section(created: CreatedServer, collector: Collector, keys: string[]): Record<string, string> {
  const values = created.os_collect_config[collector];
  assert.ok(values, `os_collect_config has no "${collector}" key: ${JSON.stringify(created.os_collect_config)}`);
  for (const key of keys) assert.equal(typeof values[key], 'string', `os_collect_config.${collector}.${key}`);
  return values;
}

/** `--<collector>-<key>` flags for each key (oslo spells group options with dashes). */
function flags(collector: Collector, values: Record<string, string>, keys: string[]): string[] {
  return keys.flatMap((key) => [`--${collector}-${key.replaceAll('_', '-')}`, values[key]!]);
}

/** Runs the three checks for one transport: flags, generated conf file, and a wrong secret. */
async function checkTransport(
  server: TestServer,
  created: CreatedServer,
  collector: Collector,
  keys: string[],
  wrong: (values: Record<string, string>) => Record<string, string>,
): Promise<void> {
  const deploymentId = await operatorApi(server).deployScript(created.server.id);
  const values = section(created, collector, keys);
  const expected = await guestMetadata(server, created);
  assertOnlyDeployment(expected, deploymentId, SCRIPT);

  const fromFlags = await collect(collector, flags(collector, values, keys));
  assert.deepEqual(fromFlags.printed, { [collector]: expected }, `${collector} from flags`);

  assert.match(created.os_collect_config_conf, /^\[DEFAULT\]$/m);
  assert.match(created.os_collect_config_conf, new RegExp(`^\\[${collector}\\]$`, 'm'));
  const conf = '@SCRATCH@/os-collect-config.conf';
  const fromConf = await collect(collector, ['--config-file', conf], { [conf]: created.os_collect_config_conf });
  assert.deepEqual(fromConf.printed, { [collector]: expected }, `${collector} from the generated os_collect_config_conf`);

  const denied = await collect(collector, flags(collector, wrong(values), keys));
  assert.deepEqual(denied.printed, {}, `${collector} with a wrong secret must collect nothing`);
  assert.match(denied.stderr, new RegExp(`Source \\[${collector}\\] Unavailable`));
}

test('os-collect-config cfn collector: POLL_SERVER_CFN metadata over signed DescribeStackResource (XML)', { skip }, async () => {
  const server = await startServer();
  try {
    const api = operatorApi(server);
    await api.createStack('web');
    const created = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
    const keys = ['metadata_url', 'access_key_id', 'secret_access_key', 'stack_name', 'path'];
    const values = section(created, 'cfn', keys);
    assert.equal(values.metadata_url, `${server.url}/v1/`);
    assert.equal(values.stack_name, 'web');
    assert.equal(values.path, `${created.server.resource_name}.Metadata`);
    await checkTransport(server, created, 'cfn', keys, (v) => ({ ...v, secret_access_key: `${v.secret_access_key}x` }));
  } finally {
    await server.close();
  }
});

test('os-collect-config heat collector: keystone v3 shim, then the resource metadata', { skip }, async () => {
  const server = await startServer();
  try {
    const api = operatorApi(server);
    await api.createStack('web');
    const created = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_HEAT', stack: 'web' });
    const keys = ['auth_url', 'user_id', 'password', 'project_id', 'stack_id', 'resource_name'];
    const values = section(created, 'heat', keys);
    assert.equal(values.auth_url, `${server.url}/v3`);
    assert.match(values.stack_id!, /^web\/[^/]+$/, 'stack_id is name/id');
    assert.equal(values.resource_name, created.server.resource_name);
    await checkTransport(server, created, 'heat', keys, (v) => ({ ...v, password: `${v.password}x` }));
  } finally {
    await server.close();
  }
});

test('os-collect-config request collector: POLL_TEMP_URL metadata from the temp URL alone', { skip }, async () => {
  const server = await startServer();
  try {
    const api = operatorApi(server);
    const created = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_TEMP_URL' });
    const keys = ['metadata_url'];
    const values = section(created, 'request', keys);
    assert.ok(values.metadata_url!.startsWith(`${server.url}/`), `a loopback temp URL: ${values.metadata_url}`);
    await checkTransport(server, created, 'request', keys, (v) => {
      const url = new URL(v.metadata_url!);
      const signature = url.searchParams.get('temp_url_sig') ?? '';
      assert.ok(signature, `the temp URL carries temp_url_sig: ${v.metadata_url}`);
      url.searchParams.set('temp_url_sig', signature.startsWith('0') ? `1${signature.slice(1)}` : `0${signature.slice(1)}`);
      return { metadata_url: url.toString() };
    });
  } finally {
    await server.close();
  }
});
