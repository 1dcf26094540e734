import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExitError } from '@hearth/agent-kit/exit';
import { createFileSecretStore } from '@hearth/agent-kit/secret-store-file';
import { loadCredentials, parseCredentialFile } from './credentials.ts';

test('parses the heat-cfntools credential file format, blanks around = allowed', () => {
  const parsed = parseCredentialFile('# comment\nAWSAccessKeyId = AK1\r\nAWSSecretKey=s/e=cret \nOther=x\n');
  assert.deepEqual(parsed, { accessKeyId: 'AK1', secretKey: 's/e=cret', secretStore: undefined });
  assert.deepEqual(parseCredentialFile('nothing'), { accessKeyId: undefined, secretKey: undefined, secretStore: undefined });
  assert.equal(parseCredentialFile('AWSAccessKeyId=AK\nHearthSecretStore = keyring\n').secretStore, 'keyring');
});

test('a credential file wins over keys; keys alone work; none gives undefined', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  const file = join(dir, 'cfn-credentials');
  writeFileSync(file, 'AWSAccessKeyId=FILEKEY\nAWSSecretKey=FILESECRET\n');
  assert.equal((await loadCredentials({ credentialFile: file, accessKey: 'A', secretKey: 'S' }))?.accessKeyId, 'FILEKEY');
  assert.deepEqual(await loadCredentials({ accessKey: 'A', secretKey: 'S' }), { accessKeyId: 'A', secretKey: 'S', origin: 'command line' });
  assert.equal(await loadCredentials({}), undefined);
  assert.equal(await loadCredentials({ useDefaultFile: true, paths: { cfnConfigDir: join(dir, 'none') } }), undefined);
  assert.equal((await loadCredentials({ useDefaultFile: true, paths: { cfnConfigDir: dir } }))?.secretKey, 'FILESECRET');
});

test('an incomplete or missing credential file, or half a key pair, is an error naming what is wrong', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  const file = join(dir, 'partial');
  writeFileSync(file, 'AWSSecretKey=ONLY\n');
  await assert.rejects(loadCredentials({ credentialFile: file }), (error: ExitError) => /no AWSAccessKeyId= line/.test(error.message));
  await assert.rejects(loadCredentials({ credentialFile: join(dir, 'missing') }), /cannot read the credential file/);
  await assert.rejects(loadCredentials({ secretKey: 'S' }), /only --secret-key was given/);
});

test('an existing default credential file that cannot be read is an error naming it, not "no credentials"', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A directory where the file belongs fails to read for root too (EISDIR), like root's 0600 file for another user (EACCES).
  mkdirSync(join(dir, 'cfn-credentials'));
  await assert.rejects(
    loadCredentials({ useDefaultFile: true, paths: { cfnConfigDir: dir } }),
    (error: ExitError) => error.code === 1 && error.message.includes(`cannot read the credential file ${join(dir, 'cfn-credentials')}`),
  );
});

test('an empty key or secret is named as empty, and no message shows the secret', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  const file = join(dir, 'cfn-credentials');
  writeFileSync(file, 'AWSAccessKeyId=AK\r\nAWSSecretKey=   \r\n');
  await assert.rejects(loadCredentials({ credentialFile: file }), (error: ExitError) =>
    /has an empty AWSSecretKey= value/.test(error.message),
  );
  writeFileSync(file, '\uFEFFAWSAccessKeyId = \nAWSSecretKey=TOPSECRET\n');
  await assert.rejects(
    loadCredentials({ credentialFile: file }),
    (error: ExitError) => /has an empty AWSAccessKeyId= value/.test(error.message) && !error.message.includes('TOPSECRET'),
  );
  writeFileSync(file, '\uFEFFAWSAccessKeyId=AK\r\nAWSSecretKey = s3cr=t\r\n');
  assert.deepEqual(await loadCredentials({ credentialFile: file }), { accessKeyId: 'AK', secretKey: 's3cr=t', origin: file });
});

/** A temp HEARTH_ROOT whose default file SecretStore (`<root>/var/lib/hearth/credentials.json`) is returned with it. */
function storeRoot(t: { after: (fn: () => void) => void }) {
  const root = mkdtempSync(join(tmpdir(), 'cfn-creds-store-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  const storePath = join(root, 'var/lib/hearth/credentials.json');
  return { root, env: { HEARTH_ROOT: root }, storePath, store: createFileSecretStore(storePath) };
}

test('a credential file without AWSSecretKey= reads cfn/<AWSAccessKeyId> from the default file SecretStore', async (t) => {
  const { root, env, store } = storeRoot(t);
  const file = join(root, 'cfn-credentials');
  writeFileSync(file, 'AWSAccessKeyId = AK1\n');
  await store.set('cfn/AK1', 'STORED-SECRET');
  await store.set('hearth/AK1', 'not this one');
  assert.deepEqual(await loadCredentials({ credentialFile: file, env }), { accessKeyId: 'AK1', secretKey: 'STORED-SECRET', origin: file });
  assert.equal((await loadCredentials({ useDefaultFile: true, paths: { cfnConfigDir: root }, env }))?.secretKey, 'STORED-SECRET');
  writeFileSync(file, 'AWSAccessKeyId=AK1\nAWSSecretKey=FROM-FILE\n');
  assert.equal((await loadCredentials({ credentialFile: file, env }))?.secretKey, 'FROM-FILE', "the file's own secret wins");
  assert.deepEqual(await loadCredentials({ accessKey: 'AK1', env }), {
    accessKeyId: 'AK1',
    secretKey: 'STORED-SECRET',
    origin: 'command line and secret store',
  });
});

test('a missing stored secret, an unsafe store file or an unknown store is exit 1 naming the store and the fix, never the secret', async (t) => {
  const { root, env, storePath, store } = storeRoot(t);
  const file = join(root, 'cfn-credentials');
  writeFileSync(file, 'AWSAccessKeyId=AK1\n');
  await assert.rejects(loadCredentials({ credentialFile: file, env }), (error: ExitError) => {
    assert.equal(error.code, 1);
    assert.equal(
      error.message,
      `the credential file ${file} has no AWSSecretKey= line, and ${storePath} holds no secret "cfn/AK1"; ` +
        `store it with: hearth-agent secret set cfn/AK1 < FILE (or add AWSSecretKey=<secret> to ${file})`,
    );
    return true;
  });
  await assert.rejects(
    loadCredentials({ accessKey: 'AK1', env }),
    /--access-key AK1 was given without --secret-key, .* holds no secret "cfn\/AK1"; store it with: hearth-agent secret set cfn\/AK1 < FILE \(or give --secret-key\)/,
  );

  await store.set('cfn/AK1', 'TOPSECRET');
  chmodSync(storePath, 0o644);
  await assert.rejects(loadCredentials({ credentialFile: file, env }), (error: ExitError) => {
    assert.equal(error.code, 1);
    assert.match(
      error.message,
      /its secret "cfn\/AK1" cannot be read from the file secret store: refusing to use secret file .* has mode 0644, wider than 0600; fix: chmod 600 /,
    );
    assert.ok(!error.message.includes('TOPSECRET'));
    return true;
  });
  chmodSync(storePath, 0o600);

  writeFileSync(file, 'AWSAccessKeyId=AK1\nHearthSecretStore=vault\n');
  await assert.rejects(loadCredentials({ credentialFile: file, env }), /its secret store "vault" is unknown; use one of: file, keyring/);
  writeFileSync(file, 'AWSAccessKeyId=AK1\nHearthSecretStore=file\n');
  assert.equal((await loadCredentials({ credentialFile: file, env }))?.secretKey, 'TOPSECRET');
});
