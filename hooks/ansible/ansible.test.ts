import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment } from '../_lib/testing.ts';

const HOOK = new URL('./ansible', import.meta.url).pathname;
const ID = 'c1f2a3b4-0000-4000-8000-000000000001';

function dirs(): { root: string; working: string; outputs: string } {
  const root = mkdtempSync(join(tmpdir(), 'hook-ansible-'));
  return {
    root,
    working: join(root, 'var/lib/heat-config/heat-config-ansible'),
    outputs: join(root, 'var/run/heat-config/heat-config-ansible'),
  };
}

const PLAYBOOK = '- hosts: localhost\n  tasks: []\n';

/** Whether a command is on PATH; in CI (CI=true) a missing real tool fails the test instead of skipping it. */
function skipUnlessInstalled(command: string, packageName: string): false | string {
  if (spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0) return false;
  const message = `${command} missing: apt-get install -y ${packageName}`;
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing tool is a failure)`);
  return message;
}

test('runs CMD -i INV [--module-path] [--skip-tags] [--tags] playbook --extra-vars @vars in <working>, with typed variables', async () => {
  const d = dirs();
  const tool = fakeTool('ansible-playbook', {
    stdout: 'PLAY RECAP\n',
    stderr: 'warn\n',
    exitCode: 4,
    files: { [join(d.outputs, `${ID}.result`)]: 'done\n' },
  });
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      group: 'ansible',
      config: PLAYBOOK,
      inputs: [
        { name: 'foo', type: 'String', value: 'bar' },
        { name: 'count', type: 'Number', value: '3' },
        { name: 'flag', type: 'Boolean', value: 'yes' },
        { name: 'list', type: 'CommaDelimitedList', value: 'a, b' },
        { name: 'data', type: 'Json', value: '{"k":[1]}' },
        { name: 'deploy_password', value: 'hunter2' },
        { name: 'deploy_signal_id', value: 'http://127.0.0.1:1/signal?Signature=s' },
      ],
      outputs: [{ name: 'result' }, { name: 'missing' }],
      options: { tags: ['web', 'db'], skip_tags: 'slow', modulepath: '/opt/modules', callback_plugins: '/opt/callbacks' },
    }),
    { env: { HEARTH_ROOT: d.root, PATH: `${tool.dir}:${process.env.PATH ?? ''}` } },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { result: 'done\n', deploy_stdout: 'PLAY RECAP\n', deploy_stderr: 'warn\n', deploy_status_code: 4 });
  const playbook = join(d.working, `${ID}_playbook.yaml`);
  const variables = join(d.working, `${ID}_variables.json`);
  const [call] = tool.calls();
  assert.ok(call);
  assert.deepEqual(call.argv, [
    '-i',
    'localhost,',
    '--module-path',
    '/opt/modules',
    '--skip-tags',
    'slow',
    '--tags',
    'web,db',
    playbook,
    '--extra-vars',
    `@${variables}`,
  ]);
  assert.equal(call.cwd, d.working);
  assert.equal(call.env.ANSIBLE_CALLBACK_PLUGINS, '/opt/callbacks');
  assert.equal(call.env.foo, undefined, 'inputs are variables, not env vars');
  assert.equal(readFileSync(playbook, 'utf8'), PLAYBOOK);
  assert.deepEqual(JSON.parse(readFileSync(variables, 'utf8')), {
    heat_config_id: ID,
    foo: 'bar',
    count: 3,
    flag: true,
    list: ['a', 'b'],
    data: { k: [1] },
    heat_outputs_path: join(d.outputs, ID),
  });
  for (const path of [playbook, variables]) assert.equal(statSync(path).mode & 0o777, 0o600, path);
  for (const path of [d.working, d.outputs]) assert.equal(statSync(path).mode & 0o777, 0o700, path);
  assert.doesNotMatch(run.stderr, /hunter2/);
});

test('HEAT_ANSIBLE_* overrides; the inventory option is joined to <working>; a shorter playbook leaves no stale tail; stale outputs are cleared', async () => {
  const d = dirs();
  const tool = fakeTool('my-ansible');
  const env = {
    HEAT_ANSIBLE_WORKING: join(d.root, 'w'),
    HEAT_ANSIBLE_OUTPUTS: join(d.root, 'o'),
    HEAT_ANSIBLE_CMD: tool.path,
    HEAT_ANSIBLE_INVENTORY: 'web1,web2,',
  };
  const first = await runHookExecutable(HOOK, sampleDeployment({ config: `${PLAYBOOK}# a long comment\n`, outputs: [{ name: 'x' }] }), {
    env,
  });
  assert.equal(first.result?.deploy_status_code, 0, first.stderr);
  writeFileSync(join(d.root, 'o', `${ID}.x`), 'stale');
  const second = await runHookExecutable(
    HOOK,
    sampleDeployment({ config: PLAYBOOK, outputs: [{ name: 'x' }], options: { inventory: 'hosts.ini' } }),
    {
      env,
    },
  );
  assert.deepEqual(second.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  assert.equal(readFileSync(join(d.root, 'w', `${ID}_playbook.yaml`), 'utf8'), PLAYBOOK);
  const calls = tool.calls();
  assert.deepEqual(calls[0]?.argv.slice(0, 2), ['-i', 'web1,web2,']);
  assert.deepEqual(calls[1]?.argv.slice(0, 2), ['-i', join(d.root, 'w', 'hosts.ini')]);
  const third = await runHookExecutable(
    HOOK,
    sampleDeployment({
      config: PLAYBOOK,
      options: { inventory: '/etc/ansible/hosts', expose_credentials: true },
      inputs: [{ name: 'deploy_password', value: 'pw' }],
    }),
    { env },
  );
  assert.equal(third.exitCode, 0);
  assert.deepEqual(tool.calls()[2]?.argv.slice(0, 2), ['-i', '/etc/ansible/hosts']);
  assert.equal(JSON.parse(readFileSync(join(d.root, 'w', `${ID}_variables.json`), 'utf8')).deploy_password, 'pw');
});

test('no config: status 0 with a note and the tool is not run; a missing binary is a failure (the original printed nothing for both)', async () => {
  const d = dirs();
  const tool = fakeTool('ansible-playbook');
  const env = { HEARTH_ROOT: d.root, PATH: `${tool.dir}:${process.env.PATH ?? ''}` };
  for (const config of ['', null]) {
    const run = await runHookExecutable(HOOK, sampleDeployment({ config }), { env });
    assert.equal(run.exitCode, 0);
    assert.equal(run.result?.deploy_status_code, 0);
    assert.match(String(run.result?.deploy_stderr), /no config/);
  }
  assert.equal(tool.calls().length, 0);
  const missing = await runHookExecutable(HOOK, sampleDeployment({ config: PLAYBOOK }), {
    env: { HEARTH_ROOT: d.root, HEAT_ANSIBLE_CMD: join(d.root, 'nope') },
  });
  assert.equal(missing.exitCode, 0);
  assert.equal(missing.result?.deploy_status_code, 1);
  assert.match(String(missing.result?.deploy_stderr), /nope/);
  const structured = await runHookExecutable(HOOK, sampleDeployment({ config: { hosts: 'all' } }), { env });
  assert.equal(structured.result?.deploy_status_code, 1);
  assert.match(String(structured.result?.deploy_stderr), /config must be the text of a playbook \(got \{"hosts":"all"\}\)/);
});

test('--help prints the usage with the command line and env vars', async () => {
  const run = await runHookExecutable(HOOK, '', { args: ['--help'] });
  assert.equal(run.exitCode, 0);
  assert.match(run.stdout, /--extra-vars @<variables>/);
  assert.match(run.stdout, /HEAT_ANSIBLE_INVENTORY/);
});

test(
  'real ansible-playbook (Debian ansible-core): a local playbook writes a file and an output from typed variables',
  { skip: skipUnlessInstalled('ansible-playbook', 'ansible-core'), timeout: 120_000 },
  async () => {
    const d = dirs();
    const target = join(d.root, 'motd');
    const playbook = `- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - copy:
        dest: ${target}
        content: "{{ greeting }} x{{ count + 1 }} {{ items | join('+') }}\\n"
        mode: "0640"
    - copy:
        dest: "{{ heat_outputs_path }}.result"
        content: "{{ heat_config_id }}"
    - debug:
        msg: "flag is {{ flag | bool }}"
      when: flag
      tags: [flagged]
`;
    const deployment = sampleDeployment({
      group: 'ansible',
      config: playbook,
      inputs: [
        { name: 'greeting', value: 'hello' },
        { name: 'count', type: 'Number', value: '2' },
        { name: 'items', type: 'CommaDelimitedList', value: 'a,b' },
        { name: 'flag', type: 'Boolean', value: 'true' },
      ],
      outputs: [{ name: 'result' }],
    });
    const env = { HEARTH_ROOT: d.root, HOME: d.root, ANSIBLE_LOCAL_TEMP: join(d.root, 'tmp'), ANSIBLE_NOCOLOR: '1' };
    const run = await runHookExecutable(HOOK, deployment, { env, timeoutMs: 110_000 });
    assert.equal(run.result?.deploy_status_code, 0, `${String(run.result?.deploy_stdout)}\n${String(run.result?.deploy_stderr)}`);
    assert.equal(readFileSync(target, 'utf8'), 'hello x3 a+b\n');
    assert.equal(statSync(target).mode & 0o777, 0o640);
    assert.equal(run.result?.result, ID);
    assert.match(String(run.result?.deploy_stdout), /flag is True/);
    assert.match(String(run.result?.deploy_stdout), /ok=3/);

    const failing = await runHookExecutable(
      HOOK,
      { ...deployment, config: '- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n    - fail: { msg: boom }\n' },
      { env, timeoutMs: 110_000 },
    );
    assert.equal(failing.result?.deploy_status_code, 2);
    assert.match(String(failing.result?.deploy_stdout), /boom/);
  },
);

/** Inputs whose numbers JSON.parse would change: a Float 1.0, an int beyond 2^53, a key like "1", a later duplicate. */
const PY_INPUTS =
  '[{"name": "ratio", "type": "Number", "value": 1.0}, {"name": "1", "value": "one"}, {"name": "big", "type": "Number", "value": 12345678901234567890},' +
  ' {"name": "data", "type": "Json", "value": {"w": 2.50, "\\u00e9": "\\u00fc"}}, {"name": "ratio", "type": "Number", "value": 1e16}]';

test('the variables file is what the original json.dump writes: 1.0 stays a float, big integers whole, input order kept', async () => {
  const d = dirs();
  const tool = fakeTool('ansible-playbook');
  const stdin = JSON.stringify(sampleDeployment({ group: 'ansible', config: PLAYBOOK, inputs: '@' })).replace('"@"', PY_INPUTS);
  const run = await runHookExecutable(HOOK, stdin, { env: { HEARTH_ROOT: d.root, PATH: `${tool.dir}:${process.env.PATH ?? ''}` } });
  assert.equal(run.exitCode, 0, run.stderr);
  const original =
    "import json, sys; c = json.load(sys.stdin); v = {'heat_config_id': c['id']}\n" +
    "for i in c['inputs']: v[i['name']] = i.get('value', '')\n" +
    "v['heat_outputs_path'] = sys.argv[1]; sys.stdout.write(json.dumps(v))";
  const expected = spawnSync('python3', ['-c', original, join(d.outputs, ID)], { input: stdin, encoding: 'utf8' });
  assert.equal(expected.status, 0, expected.stderr);
  assert.equal(readFileSync(join(d.working, `${ID}_variables.json`), 'utf8'), expected.stdout);
});
