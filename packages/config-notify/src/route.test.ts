import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit';
import { EXIT_CONFIG, EXIT_REFUSED } from './exit-codes.ts';
import { deploymentInfo, readDeployment, signalRoute } from './route.ts';
import { deploymentWith } from './test-support.ts';

const route = (inputs: Record<string, unknown>) => signalRoute(deploymentInfo(deploymentWith(inputs)));

test('transport selection follows the deploy_* inputs', () => {
  assert.deepEqual(route({ deploy_signal_id: 'http://h/v1/signal/x', deploy_signal_verb: 'POST' }), {
    transport: 'CFN_SIGNAL',
    method: 'POST',
    url: 'http://h/v1/signal/x',
  });
  assert.deepEqual(route({ deploy_signal_id: 'http://h/t', deploy_signal_verb: 'PUT', deploy_signal_transport: 'TEMP_URL_SIGNAL' }), {
    transport: 'TEMP_URL_SIGNAL',
    method: 'PUT',
    url: 'http://h/t',
  });
  assert.deepEqual(route({ deploy_signal_transport: 'HEARTH_SIGNAL', deploy_signal_id: 'http://h/s', deploy_signal_verb: 'POST' }), {
    transport: 'HEARTH_SIGNAL',
    method: 'POST',
    url: 'http://h/s',
  });
  assert.equal(route({ deploy_signal_transport: 'NO_SIGNAL', deploy_server_id: 's' }), null);
  assert.equal(route({}), null);
});

test('HEAT_SIGNAL takes its credentials and resource from the inputs', () => {
  assert.deepEqual(
    route({
      deploy_auth_url: 'http://ks/v3',
      deploy_user_id: 'u',
      deploy_username: 'name',
      deploy_password: 'p',
      deploy_project_id: 'proj',
      deploy_stack_id: 'st/1',
      deploy_resource_name: 'dep',
      deploy_region_name: 'R1',
    }),
    {
      transport: 'HEAT_SIGNAL',
      authUrl: 'http://ks/v3',
      userId: 'u',
      username: 'name',
      password: 'p',
      projectId: 'proj',
      regionName: 'R1',
      stackId: 'st/1',
      resourceName: 'dep',
    },
  );
  assert.throws(
    () => route({ deploy_auth_url: 'http://ks/v3', deploy_user_id: 'u' }),
    /deploy_password, deploy_project_id, deploy_stack_id/,
  );
});

test('a deploy_signal_transport without the input it needs is refused (exit 1) naming both, not taken for NO_SIGNAL', () => {
  for (const [transport, needed] of [
    ['HEARTH_SIGNAL', 'deploy_signal_id'],
    ['CFN_SIGNAL', 'deploy_signal_id'],
    ['TEMP_URL_SIGNAL', 'deploy_signal_id'],
    ['HEAT_SIGNAL', 'deploy_auth_url'],
  ]) {
    assert.throws(
      () => route({ deploy_signal_transport: transport, deploy_signal_id: null, deploy_stack_id: 'st/1' }),
      (error: unknown) =>
        error instanceof ExitError &&
        error.exitCode === EXIT_REFUSED &&
        error.message.startsWith(
          `deployment c0ffee00-0000-4000-8000-000000000001 names deploy_signal_transport ${transport} but has no ${needed},`,
        ),
      transport,
    );
  }
  // Named but not one it knows, or none at all: the inputs decide, as in the original.
  for (const declared of ['NO_SIGNAL', 'constructor', 'FOO_SIGNAL', ''])
    assert.equal(route({ deploy_signal_transport: declared, deploy_stack_id: 'st/1' }), null, declared);
});

test('ZAQAR_SIGNAL is a clear "not supported" error', () => {
  for (const inputs of [{ deploy_queue_id: 'q', deploy_auth_url: 'http://ks/v3' }, { deploy_signal_transport: 'ZAQAR_SIGNAL' }]) {
    assert.throws(
      () => route(inputs),
      (error: unknown) =>
        error instanceof ExitError && error.exitCode === 1 && /ZAQAR_SIGNAL, which heat-config-notify does not support/.test(error.message),
    );
  }
});

test('readDeployment: a file it cannot read or that is not JSON is exit 78 (this machine), a non-object exit 1, naming the file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hcn-route-'));
  assert.throws(
    () => readDeployment(join(dir, 'nope.json')),
    (e: unknown) => e instanceof ExitError && e.exitCode === EXIT_CONFIG && /cannot read the deployment file .*nope\.json/.test(e.message),
  );
  const refused = (pattern: RegExp) => (e: unknown) => e instanceof ExitError && e.exitCode === EXIT_REFUSED && pattern.test(e.message);
  const local = (pattern: RegExp) => (e: unknown) => e instanceof ExitError && e.exitCode === EXIT_CONFIG && pattern.test(e.message);
  // Cut short, emptied or zeroed (a crash, a full disk): handed over again once rewritten, never dropped for good.
  const damaged: Array<[string, string]> = [
    ['bad.json', '{'],
    ['empty.json', ''],
    ['zeros.json', '\0'.repeat(64)],
  ];
  for (const [name, text] of damaged) {
    writeFileSync(join(dir, name), text);
    assert.throws(() => readDeployment(join(dir, name)), local(new RegExp(`${name.replace('.', '\\.')} is not JSON`)), name);
  }
  writeFileSync(join(dir, 'list.json'), '[]');
  assert.throws(() => readDeployment(join(dir, 'list.json')), refused(/list\.json is not a JSON object/));
  writeFileSync(join(dir, 'ok.json'), JSON.stringify(deploymentWith({ a: 1 }, { creation_time: '2024-01-02T03:04:05Z' })));
  const info = readDeployment(join(dir, 'ok.json'));
  assert.deepEqual(info.inputs, { a: 1 });
  assert.equal(info.createdAtMs, Date.parse('2024-01-02T03:04:05Z'));
});
