// images/cloud-init/render-user-data.mjs: the user-data it renders from `hearth server create --json` is read
// back with PyYAML's safe_load, the parser cloud-init itself uses.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
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
  assert.match(download[2]!, /sha256sum "\$tmp"/);
  assert.deepEqual(download.slice(3), ['hearth-agent-download', 'https://files.example.test/hearth-agent', SHA]);
  assert.deepEqual(install, ['/usr/bin/hearth-agent', 'install']);
  assert.deepEqual(enable.slice(0, 4), ['systemctl', 'enable', '--now', '--no-block']);
});

test("user-data writes the element's refresh scripts and templates byte for byte, with the element's modes", { skip }, () => {
  const result = render(['--preinstalled'], JSON.stringify(CREATED));
  assert.equal(result.status, 0, result.stderr);
  const files = Object.fromEntries(parse(result.stdout).write_files.map((f) => [f.path, f]));
  // Without these a stock image's os-refresh-config has no phase to run and no deployment reaches heat-config.
  const element = join(ROOT, 'images/elements/hearth-agent/static');
  const expected = {
    '/usr/libexec/os-refresh-config/configure.d/20-os-apply-config': '0755',
    '/usr/libexec/os-refresh-config/configure.d/55-heat-config': '0755',
    '/usr/libexec/os-apply-config/templates/etc/os-collect-config.conf': '0644',
    '/usr/libexec/os-apply-config/templates/etc/os-collect-config.conf.oac': '0644',
    '/usr/libexec/os-apply-config/templates/var/run/heat-config/heat-config': '0644',
    '/usr/libexec/os-apply-config/templates/var/run/heat-config/heat-config.oac': '0644',
  };
  for (const [path, permissions] of Object.entries(expected)) {
    assert.ok(files[path], `${path} is written`);
    assert.equal(files[path].content, readFileSync(join(element, path), 'utf8'), path);
    assert.equal(files[path].permissions, permissions, path);
  }
  assert.equal(Object.keys(files).filter((path) => path.startsWith('/usr/libexec/')).length, Object.keys(expected).length);
});

/** Runs the user-data's download step for real, against `url`, with `bin` standing for /usr/bin. */
async function download(script: string, bin: string, url: string, sha: string): Promise<{ status: number | null; stderr: string }> {
  const local = script.replaceAll('/usr/bin', bin);
  // Not spawnSync: the server answering the download runs in this process.
  const child = spawn('sh', ['-c', local, 'hearth-agent-download', url, sha], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const [status] = (await once(child, 'close')) as [number | null];
  return { status, stderr };
}

test(
  'the download refuses a file whose checksum differs or cannot be fetched, leaves no temp file, and says what to do',
  { skip },
  async (t) => {
    const agent = '#!/bin/sh\necho agent\n';
    const server = createServer((request, response) => {
      if (request.url?.startsWith('/hearth-agent')) response.end(agent);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const bin = mkdtempSync(join(tmpdir(), 'hearth-cloud-init-bin-'));
    t.after(() => rmSync(bin, { recursive: true, force: true }));
    const real = createHash('sha256').update(agent).digest('hex');
    const script = (url: string, sha: string) => {
      const result = render(['--agent-url', url, '--agent-sha256', sha], JSON.stringify(CREATED));
      assert.equal(result.status, 0, result.stderr);
      return parse(result.stdout).runcmd[0]![2]!;
    };

    // A signed URL: its query (the signature) never reaches a message.
    const signed = `${base}/hearth-agent?temp_url_sig=s3cret`;
    const refused = await download(script(signed, SHA), bin, signed, SHA);
    assert.equal(refused.status, 1);
    assert.deepEqual(readdirSync(bin), [], 'the refused download is not left in /usr/bin');
    assert.match(
      refused.stderr,
      new RegExp(`hearth-agent from ${base}/hearth-agent has SHA-256 ${real}, not ${SHA}; nothing was installed`),
    );
    assert.match(refused.stderr, /render the user-data again with --agent-sha256/);
    assert.doesNotMatch(refused.stderr, /s3cret/);
    assert.deepEqual(readdirSync(bin), []);

    const missing = await download(script(`${base}/gone`, real), bin, `${base}/gone`, real);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, new RegExp(`cannot download hearth-agent from ${base}/gone: check that this VM reaches it`));
    assert.deepEqual(readdirSync(bin), []);

    const good = await download(script(signed, real), bin, signed, real);
    assert.equal(good.status, 0, good.stderr);
    assert.deepEqual(readdirSync(bin), ['hearth-agent']);
    assert.equal(readFileSync(join(bin, 'hearth-agent'), 'utf8'), agent);
    assert.equal(statSync(join(bin, 'hearth-agent')).mode & 0o777, 0o755);
  },
);

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
