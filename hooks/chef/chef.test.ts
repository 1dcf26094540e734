import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment, type FakeToolBehaviour } from '../_lib/testing.ts';

const HOOK = new URL('./chef', import.meta.url).pathname;
const ID = 'c1f2a3b4-0000-4000-8000-000000000001';

/** A HEARTH_ROOT with fake chef-client, hostname and git first on PATH. */
function setup(chef: FakeToolBehaviour = {}, hostname: FakeToolBehaviour = { stdout: 'node1.example.org\n' }, git: FakeToolBehaviour = {}) {
  const root = mkdtempSync(join(tmpdir(), 'hook-chef-'));
  const bin = mkdtempSync(join(tmpdir(), 'hook-chef-bin-'));
  return {
    root,
    working: join(root, 'var/lib/heat-config/heat-config-chef'),
    outputs: join(root, 'var/run/heat-config/heat-config-chef'),
    chef: fakeTool('chef-client', chef, bin),
    hostname: fakeTool('hostname', hostname, bin),
    git: fakeTool('git', git, bin),
    env: { HEARTH_ROOT: root, PATH: `${bin}:${process.env.PATH ?? ''}` },
  };
}

const TRANSPORT_INPUTS = [
  { name: 'deploy_server_id', value: 's1' },
  { name: 'deploy_action', value: 'CREATE' },
  { name: 'deploy_stack_id', value: 'st/1' },
  { name: 'deploy_resource_name', value: 'dep' },
  { name: 'deploy_signal_transport', value: 'HEAT_SIGNAL' },
  { name: 'deploy_auth_url', value: 'http://127.0.0.1:5000/v3' },
  { name: 'deploy_password', value: 'hunter2' },
];

test('writes client.rb and node/<fqdn>.json as the original, runs chef-client -z in <working> with heat_outputs_path', async () => {
  const s = setup({ stdout: 'Chef Client finished\n', stderr: 'w\n', exitCode: 0, files: {} });
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      group: 'chef',
      config: '["recipe[apache2]", "role[web]"]',
      inputs: [
        { name: 'port', type: 'Number', value: '8080' },
        { name: 'greeting', value: 'héllo' },
        { name: 'environment', value: "prod's" },
        ...TRANSPORT_INPUTS,
      ],
      outputs: [{ name: 'result' }],
    }),
    { env: s.env },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { deploy_stdout: 'Chef Client finished\n', deploy_stderr: 'w\n', deploy_status_code: 0 });
  const kitchen = join(s.working, 'kitchen');
  const clientRb = join(s.working, 'client.rb');
  const nodeFile = join(s.working, 'node', 'node1.example.org.json');
  assert.equal(
    readFileSync(clientRb, 'utf8'),
    [
      'log_level :debug',
      'log_location STDOUT',
      'local_mode true',
      'chef_zero.enabled true',
      `cookbook_path '${kitchen}/cookbooks'`,
      `role_path '${kitchen}/roles'`,
      `environment_path '${kitchen}/environments'`,
      "environment 'prod\\'s'",
      `node_path '${join(s.working, 'node')}'`,
    ].join('\n'),
  );
  assert.equal(
    readFileSync(nodeFile, 'utf8'),
    '{\n    "port": 8080,\n    "greeting": "h\\u00e9llo",\n    "deploy_auth_url": "http://127.0.0.1:5000/v3",\n    "run_list": [\n        "recipe[apache2]",\n        "role[web]"\n    ]\n}',
  );
  for (const path of [clientRb, nodeFile]) assert.equal(statSync(path).mode & 0o777, 0o600, path);
  const [call] = s.chef.calls();
  assert.deepEqual(call?.argv, ['-z', '--config', clientRb, '-j', nodeFile]);
  assert.equal(call?.cwd, s.working);
  assert.equal(call?.env.heat_outputs_path, join(s.outputs, ID));
  assert.equal(s.git.calls().length, 0, 'no kitchen, no clone');
  assert.doesNotMatch(run.stderr, /hunter2/);
});

test('kitchen: cloned to kitchen_path; kept on a re-run; removed and cloned again on UPDATE; a failed clone is the result', async () => {
  // The fake git answers `config --get remote.origin.url` with the kitchen's URL: the clone is that kitchen's.
  const s = setup({ exitCode: 0 }, undefined, { stdout: 'https://git.example/k.git\n' });
  const clones = () => s.git.calls().filter((call) => call.argv[0] === 'clone');
  const kitchenPath = join(s.root, 'kitchen');
  const deployment = (action: string) =>
    sampleDeployment({
      config: '[]',
      inputs: [{ name: 'deploy_action', value: action }],
      options: { kitchen: 'https://git.example/k.git', kitchen_path: kitchenPath },
    });
  const first = await runHookExecutable(HOOK, deployment('CREATE'), { env: s.env });
  assert.equal(first.result?.deploy_status_code, 0, first.stderr);
  assert.deepEqual(s.git.calls()[0]?.argv, ['clone', '--', 'https://git.example/k.git', kitchenPath]);
  assert.equal(s.git.calls()[0]?.cwd, s.working, 'git runs in <working>, as the original did');
  assert.match(readFileSync(join(s.working, 'client.rb'), 'utf8'), new RegExp(`cookbook_path '${kitchenPath}/cookbooks'`));
  mkdirSync(join(kitchenPath, '.git'), { recursive: true });
  writeFileSync(join(kitchenPath, 'old'), 'x');
  await runHookExecutable(HOOK, deployment('CREATE'), { env: s.env });
  assert.equal(clones().length, 1, 'an existing clone is kept');
  await runHookExecutable(HOOK, deployment('UPDATE'), { env: s.env });
  assert.equal(clones().length, 2);
  assert.equal(existsSync(join(kitchenPath, 'old')), false, 'UPDATE removed the old kitchen before cloning');

  // A kitchen that looks like an option reaches git as a repository.
  const dashed = setup({ exitCode: 0 });
  const optionLike = sampleDeployment({
    config: '[]',
    options: { kitchen: '--upload-pack=touch /tmp/x', kitchen_path: join(dashed.root, 'k') },
  });
  await runHookExecutable(HOOK, optionLike, { env: dashed.env });
  assert.deepEqual(dashed.git.calls()[0]?.argv, ['clone', '--', '--upload-pack=touch /tmp/x', join(dashed.root, 'k')]);

  const failing = setup({}, undefined, { stderr: 'fatal: repository not found\n', exitCode: 128 });
  const run = await runHookExecutable(HOOK, deployment('CREATE'), { env: failing.env });
  assert.equal(run.exitCode, 0);
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: 'fatal: repository not found\n', deploy_status_code: 128 });
  assert.equal(failing.chef.calls().length, 0);
});

test('failures: hostname -f, a config that is not a run list, a missing chef-client; chef-client exit code and outputs; env overrides', async () => {
  const noHost = setup({}, { stderr: 'hostname: Name or service not known\n', exitCode: 1 });
  const hostFailed = await runHookExecutable(HOOK, sampleDeployment({ config: '[]' }), { env: noHost.env });
  assert.equal(hostFailed.result?.deploy_status_code, 1);
  assert.match(
    String(hostFailed.result?.deploy_stderr),
    /could not determine the host name with hostname -f\nhostname: Name or service not known/,
  );
  assert.equal(noHost.chef.calls().length, 0);

  const s = setup({ stdout: 'FATAL\n', exitCode: 3 });
  for (const config of ['recipe[x]', null]) {
    const bad = await runHookExecutable(HOOK, sampleDeployment({ config }), { env: s.env });
    assert.equal(bad.result?.deploy_status_code, 1);
    assert.match(String(bad.result?.deploy_stderr), /config must be a JSON run list/);
  }
  const env = { ...s.env, HEAT_CHEF_WORKING: join(s.root, 'w'), HEAT_CHEF_OUTPUTS: join(s.root, 'o') };
  mkdirSync(join(s.root, 'o'), { recursive: true });
  writeFileSync(join(s.root, 'o', `${ID}.stale`), 'old');
  const failed = await runHookExecutable(HOOK, sampleDeployment({ config: ['recipe[x]'], outputs: [{ name: 'stale' }] }), { env });
  assert.deepEqual(failed.result, { deploy_stdout: 'FATAL\n', deploy_stderr: '', deploy_status_code: 3 });
  assert.ok(existsSync(join(s.root, 'w', 'node', 'node1.example.org.json')));
  const missing = await runHookExecutable(HOOK, sampleDeployment({ config: '[]' }), {
    env: { ...env, HEAT_CHEF_CMD: join(s.root, 'no-chef') },
  });
  assert.equal(missing.result?.deploy_status_code, 1);
  assert.match(String(missing.result?.deploy_stderr), /no-chef/);
});

/** A local git repository (no network) whose file `which` holds `name`. */
function gitRepo(parent: string, name: string): string {
  const repo = join(parent, name);
  mkdirSync(join(repo, 'cookbooks'), { recursive: true });
  writeFileSync(join(repo, 'which'), name);
  writeFileSync(join(repo, 'cookbooks', '.keep'), '');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', repo, '-c', 'user.email=t@t', '-c', 'user.name=t', ...args], { stdio: 'pipe' });
  git('init', '-q');
  git('add', '.');
  git('commit', '-qm', name);
  return repo;
}

test("with real git: a relative kitchen_path is under <working>; another deployment's kitchen at the path is replaced, not used", async () => {
  const root = mkdtempSync(join(tmpdir(), 'hook-chef-git-'));
  const bin = mkdtempSync(join(tmpdir(), 'hook-chef-bin-'));
  const chef = fakeTool('chef-client', {}, bin);
  fakeTool('hostname', { stdout: 'node1.example.org\n' }, bin);
  const env = { HEARTH_ROOT: root, PATH: `${bin}:${process.env.PATH ?? ''}` };
  const working = join(root, 'var/lib/heat-config/heat-config-chef');
  const repoA = gitRepo(root, 'A');
  const repoB = gitRepo(root, 'B');
  const deployment = (action: string, kitchen: string, kitchenPath: string) =>
    sampleDeployment({ config: '[]', inputs: [{ name: 'deploy_action', value: action }], options: { kitchen, kitchen_path: kitchenPath } });

  // Relative: cloned where chef-client (run in <working>) looks, never into the hook's own cwd.
  const cwd = mkdtempSync(join(tmpdir(), 'hook-chef-cwd-'));
  mkdirSync(join(cwd, 'rel'));
  writeFileSync(join(cwd, 'rel', 'precious'), "not the hook's");
  const relative = await runHookExecutable(HOOK, deployment('CREATE', repoA, 'rel'), { env, cwd });
  assert.equal(relative.result?.deploy_status_code, 0, relative.stderr);
  assert.equal(readFileSync(join(working, 'rel', 'which'), 'utf8'), 'A');
  assert.match(readFileSync(join(working, 'client.rb'), 'utf8'), new RegExp(`cookbook_path '${working}/rel/cookbooks'`));
  const updated = await runHookExecutable(HOOK, deployment('UPDATE', repoA, 'rel'), { env, cwd });
  assert.equal(updated.result?.deploy_status_code, 0, updated.stderr);
  assert.equal(readFileSync(join(cwd, 'rel', 'precious'), 'utf8'), "not the hook's", 'UPDATE removed nothing in the hook cwd');
  assert.equal(existsSync(join(cwd, 'rel', '.git')), false);

  // The default kitchen_path is shared: B's deployment must run B's cookbooks, and a re-run of B keeps its clone.
  const kitchen = join(working, 'kitchen');
  for (const repo of [repoA, repoB]) {
    const run = await runHookExecutable(HOOK, deployment('CREATE', repo, ''), { env });
    assert.equal(run.result?.deploy_status_code, 0, run.stderr);
  }
  assert.equal(readFileSync(join(kitchen, 'which'), 'utf8'), 'B', "B's kitchen, not A's");
  writeFileSync(join(kitchen, 'marker'), 'kept');
  const again = await runHookExecutable(HOOK, deployment('CREATE', repoB, ''), { env });
  assert.equal(again.result?.deploy_status_code, 0, again.stderr);
  assert.equal(readFileSync(join(kitchen, 'marker'), 'utf8'), 'kept', 'the same kitchen is kept on a re-run');
  assert.equal(chef.calls().length, 5);
});
