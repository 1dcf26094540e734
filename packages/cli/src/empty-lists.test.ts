import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '@hearth/client';
import { startServer, type TestServer } from '../../../test/helpers/server.ts';
import { createOutput } from './output.ts';
import { runWithClient } from './test-support.ts';

// Every list command against a real hearth-server with nothing in it: a note on stderr, nothing on
// stdout, exit 0; with --json the reply's document and nothing else.

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.close());

/** A list command: argv, the note of its empty human list, its JSON document (null: not checked). */
type ListCase = [string[], RegExp, unknown];

/** Runs each list human and with --json, asserting what an empty list prints. */
async function assertEmpty(cases: ListCase[]): Promise<void> {
  const env = { HEARTH_URL: server.url, HEARTH_TOKEN: server.token };
  for (const [argv, note, document] of cases) {
    const human = await runWithClient(argv, env);
    assert.deepEqual([human.code, human.stdout], [0, ''], `hearth ${argv.join(' ')}: ${human.stderr}`);
    assert.match(human.stderr, note, `hearth ${argv.join(' ')}`);
    const json = await runWithClient(['--json', ...argv], env);
    assert.deepEqual([json.code, json.stderr], [0, ''], `hearth --json ${argv.join(' ')}`);
    if (document !== null) assert.deepEqual(JSON.parse(json.stdout), document, `hearth --json ${argv.join(' ')}`);
  }
}

test('an empty list prints a note on stderr and nothing on stdout, exit 0; --json prints only the document', async () => {
  await assertEmpty([
    [['stack', 'list'], /^hearth: no stacks in project default\n$/, { stacks: [] }],
    [['server', 'list'], /^hearth: no servers in project default\n$/, { servers: [] }],
    [['config', 'list'], /^hearth: no software configs in project default\n$/, { software_configs: [] }],
    [['deployment', 'list'], /^hearth: no deployments in project default\n$/, { software_deployments: [] }],
    [
      ['deployment', 'list', '--server', 'vm-9'],
      /^hearth: no deployments to server vm-9 in project default\n$/,
      { software_deployments: [] },
    ],
    [['events'], /^hearth: no events in project default\n$/, { events: [], next_cursor: '0' }],
    [['events', '--type', 'deployment.failed'], /^hearth: no events of type deployment\.failed in project default\n$/, null],
    [['alarm', 'list'], /^hearth: no alarms in project default\n$/, { alarms: [] }],
    [['metrics', 'list'], /^hearth: no metric samples in project default\n$/, { samples: [] }],
    [['metrics', 'list', '--metric', 'CPU'], /^hearth: no metric samples matching the filters in project default\n$/, { samples: [] }],
  ]);
});

test('an empty stack-scoped list names its stack; a list with rows prints its table and no note', async () => {
  const client = createClient({ url: server.url, token: server.token });
  await client.createStack({ stack_name: 'web' });
  await client.createStack({ stack_name: 'empty' });
  await client.createScalingGroup('web', { name: 'workers', min_size: 0, max_size: 2, actuator: { url: 'http://127.0.0.1:9/hook' } });
  await assertEmpty([
    [['waitcondition', 'list', '--stack', 'web'], /^hearth: no wait conditions in stack web\n$/, { wait_conditions: [] }],
    [['scaling-group', 'list', '--stack', 'empty'], /^hearth: no scaling groups in stack empty\n$/, { scaling_groups: [] }],
    [['scaling-policy', 'list', '--stack', 'web'], /^hearth: no scaling policies in stack web\n$/, { scaling_policies: [] }],
    [
      ['scaling-group', 'members', 'workers', '--stack', 'web'],
      /^hearth: scaling group workers of stack web has no members\n$/,
      { members: [] },
    ],
  ]);
  const env = { HEARTH_URL: server.url, HEARTH_TOKEN: server.token };
  const stacks = await runWithClient(['stack', 'list'], env);
  assert.equal(stacks.stderr, '');
  assert.match(stacks.stdout, /^ID +NAME +STATUS +CREATED\n(\S+ +\S+ .*\n){2}$/);
  const groups = await runWithClient(['scaling-group', 'list', '--stack', 'web'], env);
  assert.deepEqual([groups.stderr, groups.stdout.split('\n')[1]?.split(' ')[0]], ['', 'workers']);
});

test('Output.list: table, or the note on stderr when empty; --json writes the document whatever the rows', () => {
  const run = (json: boolean, rows: string[]) => {
    const out = { stdout: '', stderr: '' };
    createOutput(json, { write: (t) => void (out.stdout += t) }, { write: (t) => void (out.stderr += t) }).list(
      { rows },
      [{ header: 'name', value: (r: string) => r }],
      rows,
      'no rows',
    );
    return out;
  };
  assert.deepEqual(run(false, ['a']), { stdout: 'NAME\na\n', stderr: '' });
  assert.deepEqual(run(false, []), { stdout: '', stderr: 'hearth: no rows\n' });
  assert.deepEqual(run(true, []), { stdout: '{\n  "rows": []\n}\n', stderr: '' });
});

test('an alarm, scaling group or policy that does not exist: exit 1 and the command that lists them', async () => {
  const env = { HEARTH_URL: server.url, HEARTH_TOKEN: server.token };
  for (const [argv, hint] of [
    [['alarm', 'show', 'nope'], 'see the alarms with `hearth alarm list`'],
    [['alarm', 'history', 'nope'], 'see the alarms with `hearth alarm list`'],
    [['scaling-group', 'show', 'nope', '--stack', 'web'], "see the stack's scaling groups with `hearth scaling-group list --stack STACK`"],
    [
      ['scaling-policy', 'show', 'nope', '--stack', 'web'],
      "see the stack's scaling policies with `hearth scaling-policy list --stack STACK`",
    ],
  ] as const) {
    const ran = await runWithClient([...argv], env);
    assert.equal(ran.code, 1, ran.stderr);
    assert.match(ran.stderr, /does not exist/);
    assert.ok(ran.stderr.endsWith(`\nhearth: hint: ${hint}\n`), ran.stderr);
  }
});
