import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment, type FakeToolBehaviour } from '../_lib/testing.ts';

const HOOK = new URL('./salt', import.meta.url).pathname;
const ID = 'c1f2a3b4-0000-4000-8000-000000000001';

function setup(behaviour: FakeToolBehaviour) {
  const root = mkdtempSync(join(tmpdir(), 'hook-salt-'));
  const tool = fakeTool('salt-call', behaviour);
  return {
    root,
    tool,
    working: join(root, 'var/lib/heat-config/heat-config-salt'),
    outputs: join(root, 'var/run/heat-config/heat-config-salt'),
    env: { HEARTH_ROOT: root, PATH: `${tool.dir}:${process.env.PATH ?? ''}`, SALT_MINION_CONFIG: '/srv/minion' },
  };
}

const state = (result: boolean | null, comment = '') => ({ result, comment, changes: {}, name: 'x' });
const ok = JSON.stringify({ local: { 'file_|-motd_|-/etc/motd_|-managed': state(true), 'cmd_|-a_|-a_|-run': state(true) } });

test('runs salt-call --local state.sls <id> over <working>, with the inputs as pillar data; every result true is status 0', async () => {
  const s = setup({ stdout: ok, stderr: '[WARNING] w\n', exitCode: 0 });
  const config = { motd: { file: { managed: [{ name: '/etc/motd' }, { contents: '{{ pillar["greeting"] }}' }] } } };
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      group: 'salt',
      config,
      inputs: [
        { name: 'greeting', value: 'hi {{ not rendered }}' },
        { name: 'count', type: 'Number', value: '3' },
        { name: 'names', type: 'CommaDelimitedList', value: 'a,b' },
        { name: 'deploy_password', value: 'hunter2' },
      ],
      outputs: [{ name: 'result' }],
    }),
    { env: s.env },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { deploy_stdout: ok, deploy_stderr: '[WARNING] w\n', deploy_status_code: 0 });
  const pillarRoot = join(s.working, `${ID}_pillar`);
  const [call] = s.tool.calls();
  assert.ok(call);
  assert.deepEqual(call.argv, [
    '--local',
    '--retcode-passthrough',
    '--out',
    'json',
    '--file-root',
    s.working,
    '--pillar-root',
    pillarRoot,
    'state.sls',
    ID,
  ]);
  assert.equal(call.cwd, s.working);
  assert.equal(call.env.SALT_MINION_CONFIG, '/srv/minion');
  assert.equal(call.env.greeting, undefined);
  const sls = join(s.working, `${ID}.sls`);
  assert.deepEqual(JSON.parse(readFileSync(sls, 'utf8')), config);
  assert.equal(statSync(sls).mode & 0o777, 0o700);
  assert.equal(readFileSync(join(pillarRoot, 'top.sls'), 'utf8'), "base:\n  '*':\n    - heat_config\n");
  const pillar = readFileSync(join(pillarRoot, 'heat_config.sls'), 'utf8');
  assert.match(pillar, /^#!json\n/);
  assert.deepEqual(JSON.parse(pillar.slice('#!json\n'.length)), {
    heat_config_id: ID,
    greeting: 'hi {{ not rendered }}',
    count: 3,
    names: ['a', 'b'],
    heat_outputs_path: join(s.outputs, ID),
  });
  assert.equal(statSync(join(pillarRoot, 'heat_config.sls')).mode & 0o777, 0o600);
});

test('a failed state: its return goes to deploy_stderr and the status is the exit code, 2 when salt-call exited 0', async () => {
  const failing = JSON.stringify({ local: { a: state(true), b: state(false, 'boom') } });
  for (const [exitCode, status] of [
    [2, 2],
    [0, 2],
    [11, 11],
  ] as const) {
    const s = setup({ stdout: failing, stderr: 'err\n', exitCode, files: {} });
    const run = await runHookExecutable(HOOK, sampleDeployment({ config: 'a:\n  cmd.run: []\n' }), { env: s.env });
    assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: `err\n${failing}`, deploy_status_code: status });
    assert.equal(readFileSync(join(s.working, `${ID}.sls`), 'utf8'), 'a:\n  cmd.run: []\n');
  }
});

test('a non-zero exit with every result true (or null, test mode) is success, as the original forced it', async () => {
  const stdout = JSON.stringify({ local: { a: state(true), b: state(null) } });
  const s = setup({ stdout, exitCode: 1 });
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: 'a: {}\n' }), { env: s.env });
  assert.equal(run.result?.deploy_status_code, 0);
});

test('a render error (a list of messages), unparsable output or a missing salt-call fail; outputs come from files; HEAT_SALT_* overrides', async () => {
  const errors = JSON.stringify({ local: ['Rendering SLS failed: mapping values are not allowed here'] });
  const s = setup({ stdout: errors, exitCode: 1, files: {} });
  const env = { ...s.env, HEAT_SALT_WORKING: join(s.root, 'w'), HEAT_SALT_OUTPUTS: join(s.root, 'o') };
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: 'bad: : yaml' }), { env });
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: errors, deploy_status_code: 1 });
  assert.equal(s.tool.calls()[0]?.argv[5], join(s.root, 'w'));

  const garbage = setup({ stdout: 'Traceback (most recent call last):\n', exitCode: 0 });
  const crashed = await runHookExecutable(HOOK, sampleDeployment({ config: '' }), { env: garbage.env });
  assert.equal(crashed.result?.deploy_status_code, 2);
  assert.match(String(crashed.result?.deploy_stderr), /Traceback/);

  const withOutput = setup({ stdout: ok, files: { [join(s.root, 'outs', `${ID}.answer`)]: '42' } });
  const answered = await runHookExecutable(HOOK, sampleDeployment({ config: null, outputs: [{ name: 'answer' }, { name: 'none' }] }), {
    env: { ...withOutput.env, HEAT_SALT_OUTPUTS: join(s.root, 'outs') },
  });
  assert.deepEqual(answered.result, { answer: '42', deploy_stdout: ok, deploy_stderr: '', deploy_status_code: 0 });

  const missing = await runHookExecutable(HOOK, sampleDeployment({ config: 'a: {}' }), {
    env: { ...env, HEAT_SALT_CMD: join(s.root, 'no-salt') },
  });
  assert.equal(missing.exitCode, 0);
  assert.equal(missing.result?.deploy_status_code, 1);
  assert.match(String(missing.result?.deploy_stderr), /no-salt/);
});

test('the pillar is json.dumps text (indent 2): a Float input stays a float for salt, big integers whole, input order kept', async () => {
  const s = setup({ stdout: ok, exitCode: 0 });
  const inputs =
    '[{"name": "ratio", "type": "Number", "value": 1.0}, {"name": "1", "value": "one"}, {"name": "big", "type": "Number", "value": 12345678901234567890},' +
    ' {"name": "data", "type": "Json", "value": {"w": 2.50, "\\u00e9": "\\u00fc"}}, {"name": "ratio", "type": "Number", "value": 1e16}]';
  const stdin = JSON.stringify(sampleDeployment({ group: 'salt', config: {}, inputs: '@' })).replace('"@"', inputs);
  const run = await runHookExecutable(HOOK, stdin, { env: s.env });
  assert.equal(run.exitCode, 0, run.stderr);
  const pillar =
    "import json, sys; c = json.load(sys.stdin); p = {'heat_config_id': c['id']}\n" +
    "for i in c['inputs']: p[i['name']] = i.get('value', '')\n" +
    "p['heat_outputs_path'] = sys.argv[1]; sys.stdout.write('#!json\\n' + json.dumps(p, indent=2) + '\\n')";
  const expected = spawnSync('python3', ['-c', pillar, join(s.outputs, ID)], { input: stdin, encoding: 'utf8' });
  assert.equal(expected.status, 0, expected.stderr);
  assert.equal(readFileSync(join(s.working, `${ID}_pillar`, 'heat_config.sls'), 'utf8'), expected.stdout);
});

test('a structured state is written as json.dumps(indent=2, ensure_ascii=False) writes it: 1.0 a float, big integers whole', async () => {
  const s = setup({ stdout: ok, exitCode: 0 });
  const config =
    '{"motd": {"file.managed": [{"name": "/etc/motd"}, {"contents": "h\\u00e9 \\ud83d\\ude00"}, {"mode": 1.0}, {"n": 12345678901234567890}]}}';
  const stdin = JSON.stringify(sampleDeployment({ id: ID, group: 'salt', config: '@' })).replace('"@"', config);
  const run = await runHookExecutable(HOOK, stdin, { env: s.env });
  assert.equal(run.exitCode, 0, run.stderr);
  const script = 'import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin)["config"], indent=2, ensure_ascii=False) + "\\n")';
  const expected = spawnSync('python3', ['-c', script], { input: stdin, encoding: 'utf8' });
  assert.equal(expected.status, 0, expected.stderr);
  assert.equal(readFileSync(join(s.working, `${ID}.sls`), 'utf8'), expected.stdout);
  assert.match(expected.stdout, /"contents": "hé 😀"[\s\S]*"mode": 1\.0\n[\s\S]*"n": 12345678901234567890\n/);
});
