import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fakeTool, runHookExecutable, sampleDeployment, type FakeToolBehaviour } from '../_lib/testing.ts';

const HOOK = new URL('./hiera', import.meta.url).pathname;

/** A HEARTH_ROOT and a fake legacy-check command. */
function setup(check: FakeToolBehaviour = { stdout: 'empty\n' }) {
  const root = mkdtempSync(join(tmpdir(), 'hook-hiera-'));
  const checker = fakeTool('check-legacy', check);
  return {
    root,
    checker,
    datadir: join(root, 'etc/puppet/hieradata'),
    config: join(root, 'etc/puppet/hiera.yaml'),
    env: { HEARTH_ROOT: root, HEAT_HIERA_ELEMENT_CHECK_CMD: `${checker.path} --key hiera.datafiles  --type raw` },
  };
}

const CONFIG = {
  hierarchy: ['"%{::uuid}"', 'heat_config_%{::deploy_config_name}', 'common'],
  datafiles: { common: { 'ntp::servers': ['a', 'b'], zeta: 1, alpha: { y: true, x: 'é' } }, 'nodes/web1': { role: 'web' } },
};

test('writes hiera.yaml (json backend over the datadir) and each datafile as Python writes it, all 0600, after the legacy check', async () => {
  const s = setup();
  const run = await runHookExecutable(HOOK, sampleDeployment({ group: 'hiera', config: CONFIG }), { env: s.env });
  assert.equal(run.exitCode, 0, run.stderr);
  assert.deepEqual(run.result, { deploy_stdout: '', deploy_stderr: '', deploy_status_code: 0 });
  assert.deepEqual(s.checker.calls()[0]?.argv, ['--key', 'hiera.datafiles', '--type', 'raw']);
  assert.equal(
    readFileSync(s.config, 'utf8'),
    `\n---\n:backends:\n  - json\n:json:\n  :datadir: ${s.datadir}\n:hierarchy:\n  - "%{::uuid}"\n  - heat_config_%{::deploy_config_name}\n  - common\n`,
  );
  const common = join(s.datadir, 'common.json');
  assert.equal(
    readFileSync(common, 'utf8'),
    '{\n    "alpha": {\n        "x": "\\u00e9",\n        "y": true\n    },\n    "ntp::servers": [\n        "a",\n        "b"\n    ],\n    "zeta": 1\n}',
  );
  assert.deepEqual(JSON.parse(readFileSync(join(s.datadir, 'nodes/web1.json'), 'utf8')), { role: 'web' });
  for (const path of [s.config, common]) assert.equal(statSync(path).mode & 0o777, 0o600, path);
  assert.equal(statSync(s.datadir).mode & 0o777, 0o700);
});

test('datafiles keep float form and big integers, byte for byte as Python json.dump(indent=4, sort_keys=True) writes them', async () => {
  const s = setup();
  // Floats with an integer value (Puppet tells Float from Integer), beyond 2^53, -0.0, a small float; raw text,
  // as JSON.stringify of a JS object could not hold them.
  const data = '{"port": 8080, "ratio": 1.0, "limit": 1e16, "id": 12345678901234567890, "zero": -0.0, "eps": 1e-05, "l": [2.50, 1E+2]}';
  const stdin = `{"id": "d1", "group": "hiera", "config": {"datafiles": {"common": ${data}}}}`;
  const run = await runHookExecutable(HOOK, stdin, { env: s.env });
  assert.equal(run.result?.deploy_status_code, 0, run.stderr);
  const script = 'import json, sys; sys.stdout.write(json.dumps(json.load(sys.stdin), indent=4, sort_keys=True))';
  const expected = execFileSync('python3', ['-c', script], { input: data, encoding: 'utf8' });
  assert.match(expected, /"ratio": 1\.0,/);
  assert.equal(readFileSync(join(s.datadir, 'common.json'), 'utf8'), expected);
});

test('legacy hieradata: status 1 with the message and the checker output as text (the original crashed); nothing written', async () => {
  const s = setup({ stdout: '{"common": {"a": 1}}\n' });
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: CONFIG }), { env: s.env });
  assert.equal(run.exitCode, 0);
  assert.equal(run.result?.deploy_status_code, 1);
  assert.equal(run.result?.deploy_stdout, '{"common": {"a": 1}}\n');
  assert.match(
    String(run.result?.deploy_stderr),
    /^Legacy hieradata from os-apply-config has been detected - \{"common": \{"a": 1\}\}\. Please update/,
  );
  assert.equal(existsSync(s.datadir), false);
  assert.equal(existsSync(s.config), false);
});

test('a check command that is missing or fails means no legacy data; env overrides; only the parts given are written', async () => {
  const failing = setup({ stderr: 'no metadata\n', exitCode: 1 });
  const datadir = join(failing.root, 'data');
  const hieraConfig = join(failing.root, 'cfg', 'hiera.yaml');
  const env = { ...failing.env, HEAT_PUPPET_HIERA_DATADIR: datadir, HEAT_HIERA_CONFIG: hieraConfig };
  const run = await runHookExecutable(HOOK, sampleDeployment({ config: { datafiles: { common: {} } } }), { env });
  assert.equal(run.result?.deploy_status_code, 0, run.stderr);
  assert.match(run.stderr, /legacy hiera check failed, assuming no legacy data/);
  assert.deepEqual(readdirSync(datadir), ['common.json']);
  assert.equal(readFileSync(join(datadir, 'common.json'), 'utf8'), '{}');
  assert.equal(existsSync(hieraConfig), false, 'no hierarchy, no hiera.yaml');

  const missing = await runHookExecutable(HOOK, sampleDeployment({ config: { hierarchy: ['common'] } }), {
    env: { ...env, HEAT_HIERA_ELEMENT_CHECK_CMD: join(failing.root, 'no-such-command --key x') },
  });
  assert.equal(missing.result?.deploy_status_code, 0, missing.stderr);
  assert.match(readFileSync(hieraConfig, 'utf8'), /:datadir: .*\/data\n:hierarchy:\n {2}- common\n$/);
});

test('a config that is not {hierarchy, datafiles}, or a datafile name that climbs out of the datadir, fails with the reason', async () => {
  const s = setup();
  for (const [config, reason] of [
    ['hierarchy: [a]', /config must be an object \{hierarchy, datafiles\}/],
    [null, /config must be an object/],
    [{ datafiles: ['a'] }, /config.datafiles must map names to data/],
    [{ datafiles: { '../../etc/passwd': {} } }, /datafile name "\.\.\/\.\.\/etc\/passwd" cannot be a file name/],
  ] as const) {
    const run = await runHookExecutable(HOOK, sampleDeployment({ config }), { env: s.env });
    assert.equal(run.exitCode, 0);
    assert.equal(run.result?.deploy_status_code, 1, JSON.stringify(config));
    assert.match(String(run.result?.deploy_stderr), reason);
  }
  assert.equal(existsSync(join(s.root, 'etc')), false);
});

/** Skip message unless Debian's hiera and os-apply-config are here (CI=true: missing ones are a failure). */
function realToolsSkip(): false | string {
  const missing = ['hiera', 'os-apply-config'].filter(
    (command) => spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status !== 0,
  );
  if (missing.length === 0) return false;
  const message = `${missing.join(', ')} missing: apt-get install -y puppet python3-os-apply-config`;
  if (process.env.CI === 'true') throw new Error(`${message} (CI=true: a missing tool is a failure)`);
  return message;
}

test(
  'real tools: Debian os-apply-config as the legacy check (via OS_CONFIG_FILES), and Debian hiera reads what the hook wrote',
  { skip: realToolsSkip(), timeout: 60_000 },
  async () => {
    const root = mkdtempSync(join(tmpdir(), 'hook-hiera-real-'));
    const legacy = join(root, 'legacy.json');
    const current = join(root, 'current.json');
    writeFileSync(legacy, JSON.stringify({ hiera: { datafiles: { common: { mapped_data: { a: 1 } } } } }));
    writeFileSync(current, JSON.stringify({ deployments: [] }));
    const env = { HEARTH_ROOT: root, HOME: root };
    const deployment = sampleDeployment({
      group: 'hiera',
      config: { hierarchy: ['node', 'common'], datafiles: { node: { port: 8080 }, common: { port: 80, motd: 'hi' } } },
    });
    const refused = await runHookExecutable(HOOK, deployment, { env: { ...env, OS_CONFIG_FILES: legacy } });
    assert.equal(refused.result?.deploy_status_code, 1, refused.stderr);
    assert.match(
      String(refused.result?.deploy_stderr),
      /Legacy hieradata from os-apply-config has been detected - \{"common": \{"mapped_data": \{"a": 1\}\}\}/,
    );

    const run = await runHookExecutable(HOOK, deployment, { env: { ...env, OS_CONFIG_FILES: current } });
    assert.equal(run.result?.deploy_status_code, 0, run.stderr);
    const hieraYaml = join(root, 'etc/puppet/hiera.yaml');
    const lookup = (key: string) =>
      spawnSync('hiera', ['-c', hieraYaml, key], { encoding: 'utf8', env: { ...process.env, HOME: root } }).stdout.trim();
    assert.equal(lookup('port'), '8080');
    assert.equal(lookup('motd'), 'hi');
    assert.equal(lookup('absent'), 'nil');
  },
);
