// The hearth collector's secret kept in the agent's SecretStore instead of os-collect-config.conf: os-collect-config
// as a process against a real hearth-server on 127.0.0.1, reading `hearth/<access_key_id>` from the file store, and
// every way that can fail (unsafe file, missing secret) said in the log and in --status, never with the secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createFileSecretStore } from '@hearth/agent-kit';
import { startServer } from '../../../../test/helpers/server.ts';
import { operatorApi } from '../../../../test/conformance/clients.ts';
import { tempDir } from '../test-support/fixtures.ts';

const BIN = new URL('../../bin/os-collect-config.js', import.meta.url).pathname;

/** os-collect-config as a process with HEARTH_ROOT at `root` (asynchronously: the test's server must keep answering). */
function run(args: string[], root: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: root, HEARTH_ROOT: root };
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

/** The reason of the log line `Source [hearth] Unavailable.` in JSON log output. */
function unavailableReason(stderr: string): string {
  const lines = stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; reason?: string });
  const line = lines.find((entry) => entry.msg === 'Source [hearth] Unavailable.');
  assert.ok(line?.reason !== undefined, `no "Source [hearth] Unavailable." line in:\n${stderr}`);
  return line.reason;
}

test('hearth collector: the secret comes from the file store named by [hearth] secret_store, against a real hearth-server', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  const created = await api.createServer({ name: 'vm1', software_config_transport: 'HEARTH_LONG_POLL' });
  const deploymentId = await api.deployScript(created.server.id);
  const { access_key_id: accessKeyId, secret_access_key: secret } = created.credential;

  const root = tempDir();
  const storePath = join(root, 'secrets', 'credentials.json');
  const conf = join(root, 'os-collect-config.conf');
  writeFileSync(
    conf,
    [
      '[hearth]',
      `metadata_url = ${server.url}/v1/guest/metadata`,
      `access_key_id = ${accessKeyId}`,
      'secret_store = file',
      `secret_store_path = ${storePath}`,
    ].join('\n'),
  );
  const store = createFileSecretStore(storePath);
  const args = ['--config-file', conf, 'hearth'];

  // No secret stored yet: the source is unavailable, the log says which name in which store and how to put it there.
  const missing = await run(['--print', ...args], root);
  assert.equal(missing.status, 0, missing.stderr);
  assert.deepEqual(JSON.parse(missing.stdout), {});
  assert.match(
    unavailableReason(missing.stderr),
    new RegExp(
      `no secret "hearth/${accessKeyId}" in ${storePath} \\(\\[hearth\\] secret_store = file\\); ` +
        `store it with: hearth-agent secret --path ${storePath} set hearth/${accessKeyId} < FILE`,
    ),
  );

  await store.set(`hearth/${accessKeyId}`, secret);
  const printed = await run(['--print', ...args], root);
  assert.equal(printed.status, 0, printed.stderr);
  const document = JSON.parse(printed.stdout) as { hearth: { deployments: unknown[] } };
  assert.equal(document.hearth.deployments.length, 1);
  assert.ok(JSON.stringify(document.hearth.deployments[0]).includes(deploymentId));
  assert.ok(!printed.stderr.includes(secret), printed.stderr);

  // A world-readable store is refused: the source is unavailable (the daemon goes on), with the chmod that fixes it.
  chmodSync(storePath, 0o644);
  const unsafe = await run(['--one-time', '-c', 'true', ...args], root);
  assert.equal(unsafe.status, 0, unsafe.stderr);
  assert.match(unavailableReason(unsafe.stderr), new RegExp(`has mode 0644, wider than 0600; fix: chmod 600 ${storePath}$`));
  const status = await run(['--status', '--json'], root);
  assert.equal(status.status, 0, status.stderr);
  const [hearth] = (JSON.parse(status.stdout) as { collectors: Array<{ name: string; outcome: string; reason: string }> }).collectors;
  assert.equal(hearth!.outcome, 'unavailable');
  assert.match(hearth!.reason, /^cannot read secret "hearth\/.*" \(\[hearth\] secret_store = file\): refusing to use secret file /);
  for (const text of [unsafe.stderr, status.stdout, readFileSync(join(root, 'var/lib/hearth/os-collect-config.status.json'), 'utf8')]) {
    assert.ok(!text.includes(secret), 'the secret is in a log line or the status');
  }

  // A secret_access_key given in the config (here on the command line) wins: the unsafe store is not even read.
  const given = await run(['--print', '--hearth-secret-access-key', secret, ...args], root);
  assert.equal(given.status, 0, given.stderr);
  assert.equal((JSON.parse(given.stdout) as { hearth: { deployments: unknown[] } }).hearth.deployments.length, 1);

  chmodSync(storePath, 0o600);
  const fixed = await run(['--one-time', '-c', 'true', ...args], root);
  assert.equal(fixed.status, 0, fixed.stderr);
  assert.doesNotMatch(fixed.stderr, /Unavailable/);
});

test('a bad secret store setting is a configuration error (exit 1); --help lists the store options', async () => {
  const root = tempDir();
  const cases: Array<[string[], RegExp]> = [
    [['--hearth-secret-store', 'vault'], /\[hearth\] secret_store: unknown secret store backend "vault"; use one of: file, keyring/],
    [
      ['--hearth-secret-store', 'vault', '--hearth-secret-store-path', '/x'],
      /\[hearth\] secret_store: unknown secret store backend "vault"/,
    ],
    [
      ['--cfn-secret-store', 'keyring', '--cfn-secret-store-path', '/x'],
      /^os-collect-config: \[cfn\] secret_store_path = \/x is given with \[cfn\] secret_store = keyring, but it applies to secret_store = file only: set \[cfn\] secret_store = file, or remove secret_store_path$/m,
    ],
    [
      ['--cfn-secret-store-path', '/var/lib/hearth/cfn.json'],
      /^os-collect-config: \[cfn\] secret_store_path = \/var\/lib\/hearth\/cfn.json is given without \[cfn\] secret_store, but it applies to secret_store = file only: set \[cfn\] secret_store = file, or remove secret_store_path$/m,
    ],
    [
      ['--hearth-secret-store', 'file', '--hearth-secret-store-service', 'svc'],
      /\[hearth\] secret_store_service = svc is given with \[hearth\] secret_store = file, but it applies to secret_store = keyring only: set \[hearth\] secret_store = keyring, or remove secret_store_service/,
    ],
    [
      ['--hearth-secret-store-service', 'svc'],
      /\[hearth\] secret_store_service = svc is given without \[hearth\] secret_store, but it applies to secret_store = keyring only/,
    ],
  ];
  for (const [flags, message] of cases) {
    const result = await run(['--print', ...flags, 'hearth'], root);
    assert.equal(result.status, 1, flags.join(' '));
    assert.match(result.stderr, message);
  }
  const help = await run(['--help'], root);
  assert.match(help.stdout, /--hearth-secret-store VALUE +Without secret_access_key: read it from this store \(file\|keyring\)/);
  assert.match(help.stdout, /--cfn-secret-store-path VALUE/);
});
