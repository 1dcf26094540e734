// images/cloud-init/render-user-data.mjs: the user-data it renders from `hearth server create --json` is read
// back with PyYAML's safe_load, the parser cloud-init itself uses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;
const RENDER = join(ROOT, 'images/cloud-init/render-user-data.mjs');
const SHA = 'ab'.repeat(32);
const hasPyYaml = spawnSync('python3', ['-c', 'import yaml']).status === 0;
const skip = hasPyYaml || process.env.CI === 'true' ? false : 'python3 with PyYAML (cloud-init parser) not installed';

/** What `hearth server create --json` prints, with awkward bytes in the conf: `$`, a blank line, quotes, a trailing blank. */
const CREATED = {
  server: { id: 'srv-1', name: 'web-1' },
  credential: { token: 't', access_key_id: 'ak', secret_access_key: 's$$ecret', metadata_url: 'http://127.0.0.1:8004/v1/guest/metadata' },
  os_collect_config_conf:
    '[DEFAULT]\ncommand = os-refresh-config\ncollectors = hearth\n\n[hearth]\nmetadata_url = http://127.0.0.1:8004/v1/guest/metadata\n  indented = "x: y" # not a comment\nsecret_access_key = s$$ecret\n\n',
};

function render(args: string[], input: string) {
  return spawnSync(process.execPath, [RENDER, ...args], { input, encoding: 'utf8' });
}

/** The parts of cloud-config the tests read. */
interface UserData {
  write_files: Array<{ path: string; permissions: string; content: string }>;
  runcmd: string[][];
}

function parse(yamlText: string): UserData {
  const result = spawnSync('python3', ['-c', 'import sys, json, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))'], {
    input: yamlText,
    encoding: 'utf8',
  });
  assert.equal(result.status, 0, result.stderr);
  return JSON.parse(result.stdout) as UserData;
}

test('user-data writes the conf byte for byte (0600), the units, downloads a checked agent and starts it', { skip }, () => {
  const result = render(['--agent-url', 'https://files.example.test/hearth-agent', '--agent-sha256', SHA], JSON.stringify(CREATED));
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /^#cloud-config\n/);
  const data = parse(result.stdout);
  const files = Object.fromEntries(data.write_files.map((f) => [f.path, f]));
  assert.equal(files['/etc/os-collect-config.conf']!.content, CREATED.os_collect_config_conf);
  assert.equal(files['/etc/os-collect-config.conf']!.permissions, '0600');
  for (const unit of ['os-collect-config.service', 'heat-config-notify.service', 'cfn-hup.service']) {
    assert.equal(files[`/usr/lib/systemd/system/${unit}`]!.content, readFileSync(join(ROOT, 'images/systemd', unit), 'utf8'));
  }
  const [download, install, , enable] = data.runcmd as [string[], string[], string[], string[]];
  assert.equal(download[0], 'sh');
  assert.match(download[2]!, /sha256sum -c/);
  assert.deepEqual(download.slice(3), ['hearth-agent-download', 'https://files.example.test/hearth-agent', SHA]);
  assert.deepEqual(install, ['/usr/bin/hearth-agent', 'install']);
  assert.deepEqual(enable.slice(0, 4), ['systemctl', 'enable', '--now', '--no-block']);
});

test('the download script refuses a file whose checksum differs and installs one that matches', { skip }, () => {
  const result = render(['--agent-url', 'http://127.0.0.1:1/x', '--agent-sha256', SHA], JSON.stringify(CREATED));
  const script = parse(result.stdout).runcmd[0]![2]!;
  // The checksum step alone, on a local file: what the VM does after the download.
  const check = script.split('\n').find((line) => line.includes('sha256sum'))!;
  const run = (sha: string) =>
    spawnSync('sh', ['-c', `tmp=$(mktemp); printf agent > "$tmp"; set -- url ${sha}; ${check}`], { encoding: 'utf8' });
  assert.notEqual(run(SHA).status, 0);
  const real = spawnSync('sh', ['-c', 'printf agent | sha256sum | cut -d" " -f1'], { encoding: 'utf8' }).stdout.trim();
  assert.equal(run(real).status, 0);
});

test('--preinstalled downloads nothing; bad flags and input exit 2 with a reason', { skip }, () => {
  const pre = render(['--preinstalled'], JSON.stringify(CREATED));
  assert.equal(pre.status, 0, pre.stderr);
  assert.doesNotMatch(pre.stdout, /curl|sha256sum/);
  assert.match(parse(pre.stdout).runcmd[0]![2]!, /test -x \/usr\/bin\/hearth-agent/);

  const noSha = render(['--agent-url', 'https://x.test/a'], JSON.stringify(CREATED));
  assert.equal(noSha.status, 2);
  assert.match(noSha.stderr, /--agent-sha256 must be 64 hex digits/);
  const notServer = render(['--preinstalled'], JSON.stringify({ server: {} }));
  assert.equal(notServer.status, 2);
  assert.match(notServer.stderr, /no os_collect_config_conf/);
  const notJson = render(['--preinstalled'], 'server created');
  assert.equal(notJson.status, 2);
  assert.match(notJson.stderr, /cannot read the server JSON/);
  const both = render(['--preinstalled', '--agent-url', 'https://x.test/a'], JSON.stringify(CREATED));
  assert.equal(both.status, 2);
});
