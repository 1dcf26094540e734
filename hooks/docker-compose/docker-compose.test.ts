import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment } from '../_lib/testing.ts';

const HOOK = new URL('./docker-compose', import.meta.url).pathname;

function setup(behaviour: Parameters<typeof fakeTool>[1] = {}) {
  const working = join(mkdtempSync(join(tmpdir(), 'hook-compose-')), 'working');
  const tool = fakeTool('docker-compose', behaviour);
  return { working, tool, env: { HEAT_DOCKER_COMPOSE_WORKING: working, HEAT_DOCKER_COMPOSE_CMD: tool.path } };
}

const action = (name: string) => ({ name: 'deploy_action', type: 'String', value: name });
const COMPOSE = {
  web: { image: 'nginx', env_file: 'web.env' },
  db: { image: 'postgres', env_file: ['db.env', 'common.env'] },
};
const ENV_FILES =
  "[{'file_name': 'web.env', 'content': 'A=1\\n'}, {'file_name': \"db.env\", 'content': 'B=2\\n'}, {'file_name': 'unused.env', 'content': 'C=3'}]";

test('CREATE: writes docker-compose.yml and the referenced env files in <working>/<name>, then runs up -d --no-build there', async () => {
  const { working, tool, env } = setup({ stdout: 'Creating web\n', stderr: 'pulling\n' });
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      name: 'proj',
      group: 'docker-compose',
      config: COMPOSE,
      inputs: [{ name: 'env_files', value: ENV_FILES }, action('CREATE')],
    }),
    { env },
  );
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { deploy_stdout: 'Creating web\n', deploy_stderr: 'pulling\n', deploy_status_code: 0 });
  const project = join(working, 'proj');
  assert.deepEqual(JSON.parse(readFileSync(join(project, 'docker-compose.yml'), 'utf8')), COMPOSE);
  assert.equal(statSync(join(project, 'docker-compose.yml')).mode & 0o777, 0o600);
  assert.equal(statSync(project).mode & 0o777, 0o700);
  assert.equal(readFileSync(join(project, 'web.env'), 'utf8'), 'A=1\n');
  assert.equal(readFileSync(join(project, 'db.env'), 'utf8'), 'B=2\n');
  assert.equal(existsSync(join(project, 'unused.env')), false);
  const [call] = tool.calls();
  assert.deepEqual(call?.argv, ['up', '-d', '--no-build']);
  assert.equal(call?.cwd, project);
});

test('YAML text config is written as given; env_files as a JSON list are all written; the tool exit code is the status', async () => {
  const { working, tool, env } = setup({ exitCode: 1, stderr: 'no such image\n' });
  const yaml = 'web:\n  image: nginx\n  env_file: web.env\n';
  const run = await runHookExecutable(
    HOOK,
    sampleDeployment({
      name: 'p2',
      config: yaml,
      inputs: [{ name: 'env_files', type: 'Json', value: [{ file_name: 'web.env', content: 'X=1' }] }],
    }),
    { env },
  );
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: 'no such image\n', deploy_status_code: 1 });
  assert.equal(readFileSync(join(working, 'p2', 'docker-compose.yml'), 'utf8'), yaml);
  assert.equal(readFileSync(join(working, 'p2', 'web.env'), 'utf8'), 'X=1');
  assert.equal(tool.calls().length, 1);
});

test('DELETE (crashed in the original): runs down in the project and removes docker-compose.yml; nothing to do without one', async () => {
  const { working, tool, env } = setup();
  await runHookExecutable(HOOK, sampleDeployment({ name: 'proj', config: COMPOSE, inputs: [action('CREATE')] }), { env });
  const run = await runHookExecutable(HOOK, sampleDeployment({ name: 'proj', config: COMPOSE, inputs: [action('DELETE')] }), { env });
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  const calls = tool.calls();
  assert.deepEqual(
    calls.map((call) => call.argv),
    [['up', '-d', '--no-build'], ['down']],
  );
  assert.equal(calls[1]?.cwd, join(working, 'proj'));
  assert.equal(existsSync(join(working, 'proj', 'docker-compose.yml')), false);
  const again = await runHookExecutable(HOOK, sampleDeployment({ name: 'proj', config: null, inputs: [action('DELETE')] }), { env });
  assert.deepEqual(again.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  assert.equal(tool.calls().length, 2);
});

test('DELETE whose down fails reports the failure and keeps docker-compose.yml for a retry', async () => {
  const { working, env } = setup({ exitCode: 1, stderr: 'daemon down\n' });
  await runHookExecutable(HOOK, sampleDeployment({ name: 'proj', config: COMPOSE }), { env });
  const run = await runHookExecutable(HOOK, sampleDeployment({ name: 'proj', inputs: [action('DELETE')] }), { env });
  assert.equal(run.result?.deploy_status_code, 1);
  assert.equal(run.result?.deploy_stderr, 'daemon down\n');
  assert.ok(existsSync(join(working, 'proj', 'docker-compose.yml')));
});

test('an empty config (crashed in the original) succeeds without running anything', async () => {
  const { tool, env } = setup();
  for (const config of [null, '', {}]) {
    const run = await runHookExecutable(HOOK, sampleDeployment({ name: 'proj', config }), { env });
    assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 }, JSON.stringify(config));
  }
  assert.equal(tool.calls().length, 0);
});

test('unreadable env_files or a name that is not one directory fail with the reason, without running the tool', async () => {
  const { tool, env } = setup();
  const bad = await runHookExecutable(
    HOOK,
    sampleDeployment({ name: 'p', config: COMPOSE, inputs: [{ name: 'env_files', value: '[{oops' }] }),
    { env },
  );
  assert.equal(bad.result?.deploy_status_code, 1);
  assert.match(String(bad.result?.deploy_stderr), /env_files input is neither JSON nor a Python literal/);
  const notList = await runHookExecutable(
    HOOK,
    sampleDeployment({ name: 'p', config: COMPOSE, inputs: [{ name: 'env_files', value: "{'a': 1}" }] }),
    {
      env,
    },
  );
  assert.match(String(notList.result?.deploy_stderr), /must be a list of \{file_name, content\}/);
  for (const name of ['..', 'a/b']) {
    const run = await runHookExecutable(HOOK, sampleDeployment({ name, config: COMPOSE }), { env });
    assert.equal(run.result?.deploy_status_code, 1);
    assert.match(String(run.result?.deploy_stderr), /cannot name a project directory/);
  }
  assert.equal(tool.calls().length, 0);
});

test('a structured config is written as json.dumps(indent=2, ensure_ascii=False) writes it: 1.0 a float, big integers whole', async () => {
  const { working, env } = setup();
  const config = '{"web": {"image": "x", "environment": {"N": 12345678901234567890, "R": 1.0, "T": "h\\u00e9 \\ud83d\\ude00"}}}';
  const stdin = JSON.stringify(
    sampleDeployment({ name: 'proj', group: 'docker-compose', config: '@', inputs: [action('CREATE')] }),
  ).replace('"@"', config);
  const run = await runHookExecutable(HOOK, stdin, { env });
  assert.equal(run.exitCode, 0, run.stderr);
  const script = 'import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin)["config"], indent=2, ensure_ascii=False) + "\\n")';
  const expected = spawnSync('python3', ['-c', script], { input: stdin, encoding: 'utf8' });
  assert.equal(expected.status, 0, expected.stderr);
  assert.equal(readFileSync(join(working, 'proj', 'docker-compose.yml'), 'utf8'), expected.stdout);
  assert.match(expected.stdout, /"N": 12345678901234567890,\n\s*"R": 1\.0,\n\s*"T": "hé 😀"/);
});
