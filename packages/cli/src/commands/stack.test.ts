import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HearthApiError } from '@hearth/client';
import type { ServerCreated, Stack } from '@hearth/protocol';
import { EXIT } from '../errors.ts';
import { runFake } from '../test-support.ts';
import { buildServerCreate } from './server.ts';

// `hearth stack ...` and the stack and transport flags of `hearth server create`.

const stack: Stack = {
  id: 'stack-id',
  stack_name: 'web',
  project_id: 'default',
  arn: 'arn:openstack:heat::default:stacks/web/stack-id',
  stack_status: 'CREATE_COMPLETE',
  creation_time: '2030-01-01T00:00:00Z',
  links: [],
};

test('stack create sends {stack_name} and prints the stack; --json prints {stack}', async () => {
  const human = await runFake(['stack', 'create', 'web'], { createStack: async () => stack });
  assert.equal(human.code, 0, human.stderr);
  assert.deepEqual(human.calls, [['createStack', [{ stack_name: 'web' }]]]);
  assert.match(human.stdout, /^stack_name: +web$/m);
  assert.match(human.stdout, /^arn: +arn:openstack:heat::default:stacks\/web\/stack-id$/m);
  const json = await runFake(['stack', 'create', 'web', '--json'], { createStack: async () => stack });
  assert.deepEqual(JSON.parse(json.stdout), { stack });
});

test('stack create refuses a name the server would refuse, with exit 64 and no call', async () => {
  for (const name of ['1web', 'a/b', 'a b', `a${'x'.repeat(255)}`]) {
    const result = await runFake(['stack', 'create', name], { createStack: async () => assert.fail('no call expected') });
    assert.equal(result.code, EXIT.USAGE, name);
    assert.match(result.stderr, /^hearth: stack name ".*" is not valid \(ERR_USAGE\)$/m);
    assert.match(result.stderr, /^hearth: hint: start with a letter/m);
    assert.deepEqual(result.calls, []);
  }
});

test('stack list, show and delete', async () => {
  const list = await runFake(['stack', 'list'], { listStacks: async () => [stack] });
  assert.equal(list.stdout, 'ID        NAME  STATUS           CREATED\nstack-id  web   CREATE_COMPLETE  2030-01-01T00:00:00Z\n');
  const show = await runFake(['stack', 'show', 'web', '--json'], { getStack: async () => stack });
  assert.deepEqual(show.calls, [['getStack', ['web']]]);
  assert.deepEqual(JSON.parse(show.stdout), { stack });
  const deleted = await runFake(['stack', 'delete', 'web'], { deleteStack: async () => undefined });
  assert.deepEqual(deleted.calls, [['deleteStack', ['web']]]);
  assert.equal(deleted.stdout, 'deleted stack web\n');
});

test('stack delete of a non-empty stack exits 1 with the server code', async () => {
  const result = await runFake(['stack', 'delete', 'web'], {
    deleteStack: async () => {
      throw new HearthApiError({
        status: 409,
        code: 'ERR_STACK_NOT_EMPTY',
        message: 'Stack web still has 1 server(s), deployment(s) or scaling group(s); delete them first.',
        method: 'DELETE',
        url: 'http://127.0.0.1:8000/v1/default/stacks/web',
      });
    },
  });
  assert.equal(result.code, EXIT.FAILED);
  assert.match(result.stderr, /^hearth: Stack web still has .* \(HTTP 409, ERR_STACK_NOT_EMPTY\)$/m);
  // Scaling groups keep a stack too: the hint names the command that deletes them.
  assert.match(result.stderr, /hearth scaling-group delete NAME/);
});

test('buildServerCreate: transport in any case, stack and resource name; bad values are usage errors', () => {
  assert.deepEqual(buildServerCreate('vm', {}), { name: 'vm' });
  assert.deepEqual(buildServerCreate('vm', { id: 'i-1', transport: 'poll_server_cfn', stack: 'web', resourceName: 'node:0' }), {
    name: 'vm',
    id: 'i-1',
    software_config_transport: 'POLL_SERVER_CFN',
    stack: 'web',
    resource_name: 'node:0',
  });
  assert.throws(
    () => buildServerCreate('vm', { transport: 'ZAQAR_MESSAGE' }),
    /--transport "ZAQAR_MESSAGE" is not one of HEARTH_LONG_POLL, /,
  );
  assert.throws(() => buildServerCreate('vm', { resourceName: 'node' }), /--resource-name needs --stack/);
  assert.throws(() => buildServerCreate('vm', { stack: 'web', resourceName: 'a/b' }), /--resource-name "a\/b" is not valid/);
});

test('server create prints the os-collect-config.conf text and where it goes; --json prints the whole reply', async () => {
  const created: ServerCreated = {
    server: {
      id: 'vm-1',
      name: 'vm',
      project_id: 'default',
      access_key_id: 'AK',
      software_config_transport: 'POLL_SERVER_CFN',
      stack_id: 'stack-id',
      stack_name: 'web',
      resource_name: 'vm',
      creation_time: '2030-01-01T00:00:00Z',
      last_seen: null,
    },
    credential: { access_key_id: 'AK', secret_access_key: 'SK', token: 'AK:SK', metadata_url: 'http://127.0.0.1:8000/v1/guest/metadata' },
    os_collect_config: { cfn: { access_key_id: 'AK' } },
    os_collect_config_conf: '[DEFAULT]\ncollectors = cfn\n\n[cfn]\naccess_key_id = AK\n',
  };
  const human = await runFake(['server', 'create', 'vm', '--transport', 'POLL_SERVER_CFN', '--stack', 'web'], {
    createServer: async () => created,
  });
  assert.equal(human.code, 0, human.stderr);
  assert.deepEqual(human.calls, [['createServer', [{ name: 'vm', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' }]]]);
  assert.match(human.stdout, /^software_config_transport: +POLL_SERVER_CFN$/m);
  assert.match(human.stdout, /write the lines between the markers to \/etc\/os-collect-config\.conf in the VM/);
  assert.ok(
    human.stdout.endsWith('--- /etc/os-collect-config.conf ---\n[DEFAULT]\ncollectors = cfn\n\n[cfn]\naccess_key_id = AK\n--- end ---\n'),
    human.stdout,
  );
  const json = await runFake(['server', 'create', 'vm', '--json'], { createServer: async () => created });
  assert.deepEqual(JSON.parse(json.stdout), created);

  const bad = await runFake(['server', 'create', 'vm', '--transport', 'bogus'], { createServer: async () => assert.fail('no call') });
  assert.equal(bad.code, EXIT.USAGE);
  assert.match(bad.stderr, /--transport "bogus" is not one of/);
});
