import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { ExitError } from '@hearth/agent-kit/exit';
import { isProcessAlive } from '@hearth/agent-kit/process-tree';
import { startFakeCfnApi } from '../shared/fake-cfn-api.ts';
import { binEnv, binPath, runBin } from '../shared/run-bin.ts';
import { runCfnInit } from './main.ts';
import { recordingRunner } from './testing.ts';

function sandbox(t: { after: (fn: () => void) => void }) {
  const root = mkdtempSync(join(tmpdir(), 'cfn-init-main-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const out = join(root, 'out');
  const put = (path: string, value: unknown) => {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), JSON.stringify(value));
  };
  return { root, out, put, env: { HEARTH_ROOT: root } };
}

const init = (config: unknown) => ({ 'AWS::CloudFormation::Init': config });

test('no arguments: cfn-init-data is applied, logged to stderr and /var/log/cfn-init.log, and cached as last_metadata', async (t) => {
  const box = sandbox(t);
  box.put(
    'var/lib/heat-cfntools/cfn-init-data',
    init({ config: { files: { [`${box.out}/motd`]: { content: 'hi\n' } }, commands: { a: { command: `echo ran > ${box.out}/ran` } } } }),
  );
  const result = await runBin('cfn-init', [], { env: box.env });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(readFileSync(`${box.out}/motd`, 'utf8'), 'hi\n');
  assert.equal(readFileSync(`${box.out}/ran`, 'utf8'), 'ran\n');
  const log = readFileSync(join(box.root, 'var/log/cfn-init.log'), 'utf8');
  assert.match(log, /"msg":"file written".*"path":"[^"]*\/out\/motd"/);
  assert.match(log, /"msg":"command succeeded".*"command":"a"/);
  assert.match(result.stderr, /"msg":"cfn-init done"/);
  assert.deepEqual(
    JSON.parse(readFileSync(join(box.root, 'var/cache/heat-cfntools/last_metadata'), 'utf8')),
    init({ config: { files: { [`${box.out}/motd`]: { content: 'hi\n' } }, commands: { a: { command: `echo ran > ${box.out}/ran` } } } }),
  );
});

test("a file written without mode gets 0666 less cfn-init's umask, as the original's; a given mode or an existing file's wins", async (t) => {
  const box = sandbox(t);
  mkdirSync(box.out, { recursive: true });
  writeFileSync(`${box.out}/kept`, 'old', { mode: 0o600 });
  box.put(
    'var/lib/heat-cfntools/cfn-init-data',
    init({
      config: {
        files: {
          [`${box.out}/secret.conf`]: { content: 'password=x\n' },
          [`${box.out}/given`]: { content: 'x', mode: '000644' },
          [`${box.out}/kept`]: { content: 'new' },
        },
      },
    }),
  );
  // A hardened image's umask (CIS: 027): a file cfn-init creates must not come out world-readable.
  const result = spawnSync('/bin/sh', ['-c', 'umask 027 && exec "$0" "$@"', process.execPath, binPath('cfn-init')], {
    env: binEnv(box.env),
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.equal(result.status, 0, result.stderr);
  assert.equal(readFileSync(`${box.out}/secret.conf`, 'utf8'), 'password=x\n');
  assert.equal(statSync(`${box.out}/secret.conf`).mode & 0o7777, 0o640);
  assert.equal(statSync(`${box.out}/given`).mode & 0o7777, 0o644);
  assert.equal(statSync(`${box.out}/kept`).mode & 0o7777, 0o600);
});

test('no arguments: last_metadata wins over cfn-init-data (the original fallback order)', async (t) => {
  const box = sandbox(t);
  box.put('var/lib/heat-cfntools/cfn-init-data', init({ config: { files: { [`${box.out}/which`]: { content: 'boot data' } } } }));
  box.put('var/cache/heat-cfntools/last_metadata', init({ config: { files: { [`${box.out}/which`]: { content: 'cached' } } } }));
  const result = await runBin('cfn-init', [], { env: box.env });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(readFileSync(`${box.out}/which`, 'utf8'), 'cached');
});

test('a failing step exits 1 naming the section, key and exit code; later steps do not run', async (t) => {
  const box = sandbox(t);
  box.put(
    'var/lib/heat-cfntools/cfn-init-data',
    init({
      config: {
        commands: { '10_ok': { command: 'true' }, '20_fail': { command: 'exit 7' }, '30_after': { command: `touch ${box.out}/after` } },
      },
    }),
  );
  const result = await runBin('cfn-init', ['--log-format', 'text'], { env: box.env });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /ERROR cfn-init: step failed section=commands key=20_fail exitCode=7/);
  assert.match(result.stderr, /^cfn-init: commands: 20_fail: \/bin\/sh -c 'exit 7' failed \(exit code 7\)$/m);
  assert.equal(existsSync(`${box.out}/after`), false);
  assert.match(readFileSync(join(box.root, 'var/log/cfn-init.log'), 'utf8'), /step failed section=commands key=20_fail exitCode=7/);
});

test('a command that starts a daemon (`sleep 60 &`): cfn-init goes on when the command exits and the daemon outlives it', async (t) => {
  const box = sandbox(t);
  mkdirSync(box.out, { recursive: true });
  box.put(
    'var/lib/heat-cfntools/cfn-init-data',
    init({
      config: {
        commands: {
          '10_daemon': { command: `sleep 60 & echo $! > ${box.out}/daemon.pid; echo started` },
          '20_after': { command: `touch ${box.out}/after` },
        },
      },
    }),
  );
  // Before, cfn-init waited until the daemon closed the stdout it inherited: here the 60 s it sleeps.
  const result = await runBin('cfn-init', [], { env: box.env, timeoutMs: 20_000 });
  const daemon = Number(readFileSync(`${box.out}/daemon.pid`, 'utf8'));
  t.after(() => isProcessAlive(daemon) && process.kill(daemon, 'SIGKILL'));
  assert.equal(result.code, 0, result.stderr);
  assert.ok(result.durationMs < 15_000, `took ${Math.round(result.durationMs)} ms`);
  assert.ok(existsSync(`${box.out}/after`));
  assert.ok(isProcessAlive(daemon), `daemon ${daemon} did not outlive cfn-init`);
});

test('metadata without AWS::CloudFormation::Init, no metadata at all, and bad flags are errors', async (t) => {
  const box = sandbox(t);
  const none = await runBin('cfn-init', [], { env: box.env });
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no metadata: no credentials, and no readable local metadata/);
  box.put('var/lib/heat-cfntools/cfn-init-data', { deployments: [] });
  const noInit = await runBin('cfn-init', [], { env: box.env });
  assert.equal(noInit.code, 1);
  assert.match(noInit.stderr, /the metadata has no AWS::CloudFormation::Init object \(keys: deployments\)/);
  const usage = await runBin('cfn-init', ['--bogus'], { env: box.env });
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /usage: cfn-init/);
});

test('-c picks configSets, nested references included; -c without configSets is an error', async (t) => {
  const box = sandbox(t);
  const command = (name: string) => ({ commands: { c: { command: `echo ${name} >> ${box.out}/order` } } });
  box.put(
    'var/lib/heat-cfntools/cfn-init-data',
    init({
      configSets: { base: ['one'], web: [{ ConfigSet: 'base' }, 'two'], default: ['three'] },
      one: command('one'),
      two: command('two'),
      three: command('three'),
    }),
  );
  mkdirSync(box.out);
  assert.equal((await runBin('cfn-init', ['-c', 'web,default'], { env: box.env })).code, 0);
  assert.equal(readFileSync(`${box.out}/order`, 'utf8'), 'one\ntwo\nthree\n');
  box.put('var/cache/heat-cfntools/last_metadata', init({ config: command('x') }));
  const result = await runBin('cfn-init', ['--configsets', 'web'], { env: box.env });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /configSets web requested, but the metadata has no configSets/);
});

test('with keys: the metadata comes from DescribeStackResource, v2-signed (checked by the fake heat-api-cfn); a wrong secret fails', async (t) => {
  const box = sandbox(t);
  const api = await startFakeCfnApi();
  t.after(() => api.close());
  api.setMetadata('web', 'Server', init({ config: { files: { [`${box.out}/remote`]: { content: { from: 'server' } } } } }));
  box.put('var/lib/heat-cfntools/cfn-init-data', init({ config: { files: { [`${box.out}/remote`]: { content: 'local' } } } }));
  const args = ['-s', 'web', '-r', 'Server', '--access-key', api.accessKeyId, '--url', api.url];
  const result = await runBin('cfn-init', [...args, '--secret-key', api.secretKey, '--region', 'nova'], { env: box.env });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(JSON.parse(readFileSync(`${box.out}/remote`, 'utf8')), { from: 'server' });
  assert.deepEqual(
    api.requests.map((request) => [request.params.Action, request.params.SignatureVersion, request.status]),
    [['DescribeStackResource', '2', 200]],
  );
  assert.ok(existsSync(join(box.root, 'var/cache/heat-cfntools/last_metadata_Server')));
  const wrong = await runBin('cfn-init', [...args, '--secret-key', 'not-the-secret'], { env: box.env });
  assert.equal(wrong.code, 1);
  assert.equal(api.requests.at(-1)?.status, 403);
});

test('in process: a package installed in one config restarts the service that lists it in a later one', async (t) => {
  const box = sandbox(t);
  box.put(
    'var/lib/heat-cfntools/cfn-init-data',
    init({
      configSets: { default: ['install', 'run'] },
      install: { packages: { apt: { nginx: [] } } },
      run: { services: { systemd: { nginx: { enabled: true, ensureRunning: true, packages: { apt: ['nginx'] } } } } },
    }),
  );
  const runner = recordingRunner((command) => (command.startsWith('dpkg-query') ? { exitCode: 1 } : undefined));
  const stderr = new PassThrough();
  const code = await runCfnInit([], { env: box.env, stderr, context: { runner, which: (name) => name === 'systemctl' } });
  assert.equal(code, 0);
  assert.deepEqual(
    runner.calls.map((call) => call.command),
    [
      'dpkg-query -W -f ${Status} ${Version}\\n nginx',
      'apt-get install -y nginx',
      'systemctl enable nginx.service',
      'systemctl is-active --quiet nginx.service',
      'systemctl restart nginx.service',
    ],
  );
  await assert.rejects(
    runCfnInit(['-c', 'nope'], { env: box.env, stderr, context: { runner } }),
    (error: Error) => error instanceof ExitError && error.exitCode === 1 && /configSet nope requested/.test(error.message),
  );
});

test('configSets null or {} counts as none, as in the original: the config key runs', async (t) => {
  for (const configSets of [{}, null]) {
    const box = sandbox(t);
    box.put('var/lib/heat-cfntools/cfn-init-data', init({ configSets, config: { files: { [`${box.out}/ran`]: { content: 'config' } } } }));
    const result = await runBin('cfn-init', [], { env: box.env });
    assert.equal(result.code, 0, `configSets ${JSON.stringify(configSets)}: ${result.stderr}`);
    assert.equal(readFileSync(`${box.out}/ran`, 'utf8'), 'config');
  }
});
