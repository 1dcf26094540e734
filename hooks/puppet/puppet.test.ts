import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment, type FakeTool } from '../_lib/testing.ts';
import { isolation, runClient, SCRATCH } from '../../test/conformance/clients.ts';

const HOOK = new URL('./puppet', import.meta.url).pathname;
const ID = 'c1f2a3b4-0000-4000-8000-000000000001';
const MANIFEST = "notify { 'hello': }\n";

interface Setup {
  root: string;
  working: string;
  outputs: string;
  logdir: string;
  puppet: FakeTool;
  hostname: FakeTool;
  env: Record<string, string>;
}

/** A HEARTH_ROOT with a fake puppet and a fake hostname first on PATH. */
function setup(puppet: Parameters<typeof fakeTool>[1] = {}, hostnameExit = 0): Setup {
  const root = mkdtempSync(join(tmpdir(), 'hook-puppet-'));
  const bin = mkdtempSync(join(tmpdir(), 'hook-puppet-bin-'));
  return {
    root,
    working: join(root, 'var/lib/heat-config/heat-config-puppet'),
    outputs: join(root, 'var/run/heat-config/heat-config-puppet'),
    logdir: join(root, 'var/run/heat-config/deployed'),
    puppet: fakeTool('puppet', puppet, bin),
    hostname: fakeTool('hostname', { stdout: 'node1.example.org\n', exitCode: hostnameExit }, bin),
    env: { HEARTH_ROOT: root, PATH: `${bin}:${process.env.PATH ?? ''}` },
  };
}

const INPUTS = [
  { name: 'foo', type: 'String', value: 'bar' },
  { name: 'count', type: 'Number', value: 3 },
  { name: 'flag', type: 'Boolean', value: 'on' },
  { name: 'data', type: 'Json', value: '{"k":1}' },
  { name: 'deploy_password', value: 'hunter2' },
];

test('runs puppet apply with the original flags and facts; exit 2 (changes) is success; logs kept under the log dir', async () => {
  const s = setup({ stdout: 'Notice: applied\n', stderr: 'Warning: x\n', exitCode: 2, files: {} });
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      group: 'puppet',
      config: MANIFEST,
      inputs: INPUTS,
      outputs: [{ name: 'result' }],
      options: { modulepath: '/etc/puppet/modules', tags: ['a', 'b'], enable_debug: 'yes', enable_verbose: true },
    }),
    { env: s.env },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { deploy_stdout: 'Notice: applied\n', deploy_stderr: 'Warning: x\n', deploy_status_code: 0 });
  const manifest = join(s.working, `${ID}.pp`);
  const [call] = s.puppet.calls();
  assert.ok(call);
  assert.deepEqual(call.argv, [
    'apply',
    '--color',
    'false',
    '--detailed-exitcodes',
    '--logdest',
    'console',
    '--modulepath',
    '/etc/puppet/modules',
    '--tags',
    'a,b',
    '--debug',
    '--logdest',
    join(s.root, 'var/log/puppet/heat-debug.log'),
    '--verbose',
    '--logdest',
    join(s.root, 'var/log/puppet/heat-verbose.log'),
    manifest,
  ]);
  assert.equal(call.cwd, s.working);
  assert.equal(call.env.FACTER_fqdn, 'node1.example.org');
  assert.equal(call.env.FACTER_foo, 'bar');
  assert.equal(call.env.FACTER_count, '3');
  assert.equal(call.env.FACTER_flag, 'true');
  assert.equal(call.env.FACTER_data, '{"k":1}');
  assert.equal(call.env.FACTER_heat_outputs_path, join(s.outputs, ID));
  assert.equal(call.env.FACTER_deploy_password, undefined);
  assert.equal(call.env.FACTER_deploy_config_name, undefined);
  assert.deepEqual(s.hostname.calls()[0]?.argv, ['-f']);
  assert.equal(readFileSync(manifest, 'utf8'), MANIFEST);
  assert.equal(statSync(manifest).mode & 0o777, 0o700);
  const logBase = join(s.logdir, `2026-01-02-03-04-05Z-${ID}`);
  assert.equal(readFileSync(`${logBase}-stdout.log`, 'utf8'), 'Notice: applied\n');
  assert.equal(readFileSync(`${logBase}-stderr.log`, 'utf8'), 'Warning: x\n');
  assert.equal(statSync(`${logBase}-stdout.log`).mode & 0o777, 0o600);
  assert.doesNotMatch(run.stderr, /hunter2/);
});

test('enable_hiera or use_hiera writes every input to heat_config_<name>.json; enable_facter/use_facter false drops the input facts', async () => {
  for (const options of [
    { enable_hiera: true, enable_facter: false },
    { use_hiera: 'true', use_facter: 'no' },
  ]) {
    const s = setup({ exitCode: 0 });
    const run = await runHookExecutable(HOOK, sampleDeployment({ name: 'web_config', config: MANIFEST, inputs: INPUTS, options }), {
      env: s.env,
    });
    assert.equal(run.result?.deploy_status_code, 0, run.stderr);
    const datafile = join(s.root, 'etc/puppet/hieradata/heat_config_web_config.json');
    assert.deepEqual(JSON.parse(readFileSync(datafile, 'utf8')), { foo: 'bar', count: 3, flag: true, data: { k: 1 } });
    assert.equal(statSync(datafile).mode & 0o777, 0o600);
    const env = s.puppet.calls()[0]?.env ?? {};
    assert.equal(env.FACTER_deploy_config_name, 'web_config');
    assert.equal(env.FACTER_foo, undefined, JSON.stringify(options));
    assert.equal(env.FACTER_fqdn, 'node1.example.org');
  }
  const s = setup();
  const datadir = join(s.root, 'hiera');
  await runHookExecutable(HOOK, sampleDeployment({ name: 'n', config: MANIFEST, options: { enable_hiera: 1 } }), {
    env: { ...s.env, HEAT_PUPPET_HIERA_DATADIR: datadir },
  });
  assert.deepEqual(readdirSync(datadir), ['heat_config_n.json']);
  const unsafe = await runHookExecutable(HOOK, sampleDeployment({ name: '../x', config: MANIFEST, options: { enable_hiera: true } }), {
    env: s.env,
  });
  assert.equal(unsafe.result?.deploy_status_code, 1);
  assert.match(String(unsafe.result?.deploy_stderr), /deployment name becomes a file name; "\.\.\/x"/);
});

test('a failing apply keeps its exit code; hostname -f failing only drops FACTER_fqdn; env overrides; a missing puppet or a non-text config fails', async () => {
  const s = setup({ stdout: '', stderr: 'Error: boom\n', exitCode: 6 }, 1);
  const env = {
    ...s.env,
    HEAT_PUPPET_WORKING: join(s.root, 'w'),
    HEAT_PUPPET_OUTPUTS: join(s.root, 'o'),
    HEAT_PUPPET_LOGDIR: join(s.root, 'logs'),
  };
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: null, creation_time: undefined }), { env });
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: 'Error: boom\n', deploy_status_code: 6 });
  const call = s.puppet.calls()[0];
  assert.equal(call?.env.FACTER_fqdn, undefined);
  assert.equal(call?.env.FACTER_heat_outputs_path, join(s.root, 'o', ID));
  assert.equal(call?.argv.at(-1), join(s.root, 'w', `${ID}.pp`));
  assert.equal(readFileSync(join(s.root, 'w', `${ID}.pp`), 'utf8'), '');
  const [stdoutLog] = readdirSync(join(s.root, 'logs')).filter((name) => name.endsWith('-stdout.log'));
  assert.match(String(stdoutLog), new RegExp(`^\\d{4}-\\d\\d-\\d\\d-\\d\\d-\\d\\d-\\d\\dZ-${ID}-stdout\\.log$`));

  const missing = await runHookExecutable(HOOK, sampleDeployment({ config: MANIFEST }), {
    env: { ...env, HEAT_PUPPET_CMD: join(s.root, 'no-puppet') },
  });
  assert.equal(missing.exitCode, 0);
  assert.equal(missing.result?.deploy_status_code, 1);
  assert.match(String(missing.result?.deploy_stderr), /no-puppet/);
  const structured = await runHookExecutable(HOOK, sampleDeployment({ config: { class: 'x' } }), { env });
  assert.equal(structured.result?.deploy_status_code, 1);
  assert.match(String(structured.result?.deploy_stderr), /config must be the text of a manifest/);
  assert.equal(s.puppet.calls().length, 1);
});

/** Skip message when the real puppet cannot be run safely here (CI=true: missing puppet is a failure). */
function realPuppetSkip(): false | string {
  if (spawnSync('sh', ['-c', 'command -v puppet'], { stdio: 'ignore' }).status !== 0) {
    const message = 'puppet missing: apt-get install -y puppet';
    if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing tool is a failure)`);
    return message;
  }
  // Facter may ask the cloud metadata address on a KVM/Xen machine: run it only where the sandbox has no route out.
  return isolation() === 'namespace' ? false : 'needs private namespaces (root + unshare) so that facter cannot reach the network';
}

test(
  'real puppet apply (Debian puppet), default paths, in a private sandbox: a manifest writes a file and an output from facts',
  { skip: realPuppetSkip(), timeout: 180_000 },
  async () => {
    const manifest = `file { '/var/tmp/hearth-puppet': ensure => directory }
file { '/var/tmp/hearth-puppet/motd': content => "\${facts['greeting']} \${facts['count']} \${facts['fqdn']}\\n" }
file { "\${facts['heat_outputs_path']}.result": content => 'applied' }
`;
    const deployment = sampleDeployment({
      group: 'puppet',
      config: manifest,
      inputs: [
        { name: 'greeting', value: 'hello' },
        { name: 'count', type: 'Number', value: '3' },
      ],
      outputs: [{ name: 'result' }],
    });
    const run = await runClient(['sh', '-c', `exec ${HOOK} < ${SCRATCH}/deployment.json`], {
      files: { [`${SCRATCH}/deployment.json`]: JSON.stringify(deployment) },
      timeoutMs: 170_000,
    });
    assert.equal(run.exitCode, 0, run.stderr);
    const result = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.equal(result.deploy_status_code, 0, `${String(result.deploy_stdout)}\n${String(result.deploy_stderr)}`);
    assert.equal(result.result, 'applied');
    assert.match(String(result.deploy_stdout), /Applied catalog/);
    const fqdn = spawnSync('hostname', ['-f'], { encoding: 'utf8' }).stdout.trim();
    assert.equal(run.written['/var/tmp/hearth-puppet/motd'], `hello 3 ${fqdn}\n`);
    assert.equal(run.written[`/var/lib/heat-config/heat-config-puppet/${ID}.pp`], manifest);
    // /var/run is a link to /run on Debian, so the overlay records the log under /run.
    const stdoutLog = `/run/heat-config/deployed/2026-01-02-03-04-05Z-${ID}-stdout.log`;
    assert.equal(run.written[stdoutLog] ?? run.written[`/var${stdoutLog}`], result.deploy_stdout);
    assert.ok(!existsSync(`/var/lib/heat-config/heat-config-puppet/${ID}.pp`), 'default paths stayed in the sandbox');

    const failing = await runClient(['sh', '-c', `exec ${HOOK} < ${SCRATCH}/deployment.json`], {
      files: { [`${SCRATCH}/deployment.json`]: JSON.stringify({ ...deployment, config: "fail('boom')\n" }) },
      timeoutMs: 170_000,
    });
    const failed = JSON.parse(failing.stdout) as Record<string, unknown>;
    assert.equal(failed.deploy_status_code, 1);
    assert.match(String(failed.deploy_stderr), /boom/);
  },
);

test('the hiera data file is what the original json.dumps writes: 1.0 stays a float, big integers whole, input order kept', async () => {
  const s = setup();
  const inputs =
    '[{"name": "ratio", "type": "Number", "value": 1.0}, {"name": "1", "value": "one"}, {"name": "big", "type": "Number", "value": 12345678901234567890},' +
    ' {"name": "data", "type": "Json", "value": {"w": 2.50, "\\u00e9": "\\u00fc"}}, {"name": "ratio", "type": "Number", "value": 1e16}]';
  const deployment = sampleDeployment({ name: 'n', config: MANIFEST, inputs: '@', options: { enable_hiera: true } });
  const stdin = JSON.stringify(deployment).replace('"@"', inputs);
  const run = await runHookExecutable(HOOK, stdin, { env: s.env });
  assert.equal(run.result?.deploy_status_code, 0, run.stderr);
  const original =
    "import json, sys; c = json.load(sys.stdin); sys.stdout.write(json.dumps({i['name']: i.get('value', '') for i in c['inputs']}))";
  const expected = spawnSync('python3', ['-c', original], { input: stdin, encoding: 'utf8' });
  assert.equal(expected.status, 0, expected.stderr);
  assert.equal(readFileSync(join(s.root, 'etc/puppet/hieradata/heat_config_n.json'), 'utf8'), expected.stdout);
});

test('an input no fact can hold (NUL in its value) fails the deployment without running puppet, naming it', async () => {
  const s = setup({ exitCode: 0 });
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({ group: 'puppet', config: MANIFEST, inputs: [...INPUTS, { name: 'x', type: 'String', value: 'a\u0000b' }] }),
    { env: s.env },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(s.puppet.calls(), [], 'puppet never ran without the fact');
  assert.equal(run.result?.deploy_status_code, 1);
  assert.equal(
    run.result?.deploy_stderr,
    'puppet hook: puppet was not run: input "x": value contains a NUL byte; no fact can hold that: change the input\n',
  );
});
