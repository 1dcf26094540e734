import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment } from '../_lib/testing.ts';
import { isolation, runClient, SCRATCH } from '../../test/conformance/clients.ts';

const HOOK = new URL('./cfn-init', import.meta.url).pathname;
const INIT = { config: { files: { '/etc/hearth-hook-test/app.conf': { content: 'hello\n', mode: '000640' } } } };

test('writes {"AWS::CloudFormation::Init": config} to <dir>/last_metadata (0700, replaced whole), then runs cfn-init with no arguments', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'hook-cfn-')), 'cache');
  const tool = fakeTool('cfn-init', { stdout: 'out\n', stderr: 'err\n', exitCode: 2 });
  const env = { HEAT_CFN_INIT_CMD: tool.path, HEAT_CFN_INIT_LAST_METADATA_DIR: dir };
  await runHookExecutable(HOOK, sampleDeployment({ config: { config: { commands: { c: { command: 'x'.repeat(300) } } } } }), { env });
  const run = await runHookExecutable(HOOK, sampleDeployment({ group: 'cfn-init', config: INIT }), { env });
  assert.equal(run.exitCode, 0);
  assert.deepEqual(run.result, { deploy_stdout: 'out\n', deploy_stderr: 'err\n', deploy_status_code: 2 });
  const path = join(dir, 'last_metadata');
  assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), { 'AWS::CloudFormation::Init': INIT });
  assert.equal(statSync(path).mode & 0o777, 0o700);
  const calls = tool.calls();
  assert.equal(calls.length, 2);
  assert.deepEqual(calls[1]?.argv, []);
});

test('config as JSON text is accepted; a config that is not an object fails with the value and cfn-init is not run', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-cfn-'));
  const tool = fakeTool('cfn-init');
  const env = { HEAT_CFN_INIT_CMD: tool.path, HEAT_CFN_INIT_LAST_METADATA_DIR: dir };
  const text = await runHookExecutable(HOOK, sampleDeployment({ config: JSON.stringify(INIT) }), { env });
  assert.equal(text.result?.deploy_status_code, 0);
  assert.deepEqual(JSON.parse(readFileSync(join(dir, 'last_metadata'), 'utf8')), { 'AWS::CloudFormation::Init': INIT });
  for (const config of [null, '', '{bad', [1], 'true']) {
    const run = await runHookExecutable(HOOK, sampleDeployment({ config }), { env });
    assert.equal(run.exitCode, 0);
    assert.equal(run.result?.deploy_status_code, 1, JSON.stringify(config));
    assert.match(String(run.result?.deploy_stderr), /config must be an AWS::CloudFormation::Init object/);
  }
  assert.equal(tool.calls().length, 1);
});

test('last_metadata is what the original json.dump writes: 1.0 stays a float, big integers keep every digit', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hook-cfn-'));
  const tool = fakeTool('cfn-init');
  const env = { HEAT_CFN_INIT_CMD: tool.path, HEAT_CFN_INIT_LAST_METADATA_DIR: dir };
  const init = '{"config": {"files": {"/etc/app.json": {"content": {"version": 1.0, "id": 12345678901234567890, "name": "h\\u00e9"}}}}}';
  // python3 -c 'import json,sys; json.dump({"AWS::CloudFormation::Init": json.loads(INIT)}, sys.stdout)'
  const expected = `{"AWS::CloudFormation::Init": ${init}}`;
  for (const stdin of [`{"id": "d1", "config": ${init}}`, JSON.stringify({ id: 'd1', config: init })]) {
    const run = await runHookExecutable(HOOK, stdin, { env });
    assert.equal(run.result?.deploy_status_code, 0, run.stderr);
    assert.equal(readFileSync(join(dir, 'last_metadata'), 'utf8'), expected, stdin);
  }
});

test('HEARTH_ROOT prefixes the default metadata dir; cfn-init is found on PATH', async () => {
  const root = mkdtempSync(join(tmpdir(), 'hook-cfn-root-'));
  const tool = fakeTool('cfn-init');
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: INIT }), {
    env: { HEARTH_ROOT: root, PATH: `${tool.dir}:${dirname(process.execPath)}:/usr/bin:/bin` },
  });
  assert.equal(run.result?.deploy_status_code, 0, run.stderr);
  assert.equal(tool.calls().length, 1);
  assert.ok(readFileSync(join(root, 'var/cache/heat-cfntools/last_metadata'), 'utf8').includes('hello'));
});

const realCfnInit = spawnSync('sh', ['-c', 'command -v cfn-init'], { stdio: 'ignore' }).status === 0;
const skipReal = !realCfnInit
  ? "Debian's cfn-init (heat-cfntools) is not installed"
  : isolation() !== 'namespace' && 'needs a private mount namespace (root + unshare): cfn-init writes fixed paths';

test(
  "with Debian's real cfn-init (heat-cfntools) in a sandbox: files and commands applied; a failing command fails",
  { skip: skipReal },
  async () => {
    const path = `PATH=${dirname(process.execPath)}:$PATH`;
    const deployment = (config: unknown) => ({
      [`${SCRATCH}/deployment.json`]: JSON.stringify(sampleDeployment({ group: 'cfn-init', config })),
    });
    const ok = await runClient(['sh', '-c', `${path}; "${HOOK}" < ${SCRATCH}/deployment.json`], {
      files: deployment({ config: { ...INIT.config, commands: { '10_mark': { command: 'echo ran > /var/tmp/hearth-hook-cmd' } } } }),
    });
    assert.equal(ok.exitCode, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout), { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
    assert.equal(ok.written['/etc/hearth-hook-test/app.conf'], 'hello\n');
    assert.equal(ok.written['/var/tmp/hearth-hook-cmd'], 'ran\n');
    assert.match(ok.written['/var/cache/heat-cfntools/last_metadata'] ?? '', /AWS::CloudFormation::Init/);
    const failed = await runClient(['sh', '-c', `${path}; "${HOOK}" < ${SCRATCH}/deployment.json`], {
      files: deployment({ config: { commands: { '10_fail': { command: 'exit 3' } } } }),
    });
    assert.equal(failed.exitCode, 0, failed.stderr);
    assert.notEqual(JSON.parse(failed.stdout).deploy_status_code, 0);
  },
);
