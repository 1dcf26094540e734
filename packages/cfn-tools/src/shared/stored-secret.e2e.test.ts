// The cfn tools' secret kept in the agent's SecretStore instead of in clear in /etc/cfn/cfn-credentials: cfn-get-metadata,
// cfn-hup and cfn-init as real processes against a real hearth-server on 127.0.0.1, reading `cfn/<access key>` from
// the file store under HEARTH_ROOT; a missing secret or a 0644 store is exit 1 with the fix, never the secret.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFileSecretStore } from '@hearth/agent-kit/secret-store-file';
import { startServer } from '../../../../test/helpers/server.ts';
import { guestMetadata, operatorApi } from '../../../../test/conformance/clients.ts';
import { runBin, type BinResult } from './run-bin.ts';

function assertNoSecret(result: BinResult, secret: string): void {
  assert.ok(
    !result.stdout.includes(secret) && !result.stderr.includes(secret),
    `the secret was printed:\n${result.stdout}${result.stderr}`,
  );
}

test('cfn-get-metadata, cfn-hup and cfn-init read the secret of a credential file without AWSSecretKey= from the SecretStore', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const api = operatorApi(server);
  await api.createStack('web');
  const vm = await api.createServer({ name: 'vm1', software_config_transport: 'POLL_SERVER_CFN', stack: 'web' });
  const { access_key_id: accessKeyId, secret_access_key: secret } = vm.credential;
  const resource = vm.server.resource_name;
  const root = mkdtempSync(join(tmpdir(), 'cfn-stored-secret-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const env = { HEARTH_ROOT: root };
  const credentialFile = join(root, 'etc/cfn/cfn-credentials');
  mkdirSync(join(root, 'etc/cfn/hooks.d'), { recursive: true });
  // Heat's tools ignore the HearthSecretStore line; `file` is also the default.
  writeFileSync(credentialFile, `AWSAccessKeyId=${accessKeyId}\nHearthSecretStore=file\n`);
  const storePath = join(root, 'var/lib/hearth/credentials.json');
  const argv = ['-s', 'web', '-r', resource, '--credential-file', credentialFile, '-u', `${server.url}/v1/`];

  const missing = await runBin('cfn-get-metadata', argv, { env });
  assert.equal(missing.code, 1);
  assert.equal(
    missing.stderr,
    `the credential file ${credentialFile} has no AWSSecretKey= line, and ${storePath} holds no secret "cfn/${accessKeyId}"; ` +
      `store it with: hearth-agent secret set cfn/${accessKeyId} < FILE (or add AWSSecretKey=<secret> to ${credentialFile})\n`,
  );

  await createFileSecretStore(storePath).set(`cfn/${accessKeyId}`, secret);
  const read = await runBin('cfn-get-metadata', argv, { env });
  assert.equal(read.code, 0, read.stderr);
  assert.deepEqual(JSON.parse(read.stdout), await guestMetadata(server, vm));
  // stdout is the metadata, which (as Heat's) carries the os-collect-config section with the key pair: only stderr counts
  assert.ok(!read.stderr.includes(secret), read.stderr);

  writeFileSync(join(root, 'etc/cfn/cfn-hup.conf'), `[main]\nstack = web\ncredential-file = ${credentialFile}\nurl = ${server.url}/v1/\n`);
  writeFileSync(
    join(root, 'etc/cfn/hooks.conf'),
    `[changed]\ntriggers = post.add,post.update\npath = Resources.${resource}.Metadata\naction = echo fired >> ${root}/fired.log\n`,
  );
  await api.deployScript(vm.server.id, '#!/bin/sh\necho changed');
  const hup = await runBin('cfn-hup', ['-f'], { env });
  assert.equal(hup.code, 0, hup.stderr);
  assert.equal(readFileSync(join(root, 'fired.log'), 'utf8'), 'fired\n');
  assertNoSecret(hup, secret);

  // cfn-init has no credential-file flag: --access-key alone keeps the secret off its command line (and /proc).
  const init = await runBin('cfn-init', ['-s', 'web', '-r', resource, '--access-key', accessKeyId, '--url', `${server.url}/v1/`], { env });
  assert.match(init.stderr, /"msg":"metadata read","source":"server"/);
  assertNoSecret(init, secret);

  chmodSync(storePath, 0o644);
  for (const [command, args] of [
    ['cfn-get-metadata', argv],
    ['cfn-hup', ['-f']],
  ] as const) {
    const refused = await runBin(command, [...args], { env });
    assert.equal(refused.code, 1, `${command}: ${refused.stderr}`);
    assert.match(refused.stderr, new RegExp(`has mode 0644, wider than 0600; fix: chmod 600 ${storePath}`), command);
    assertNoSecret(refused, secret);
  }
});
