import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExitError } from '@hearth/agent-kit/exit';
import { loadCredentials, parseCredentialFile } from './credentials.ts';

test('parses the heat-cfntools credential file format, blanks around = allowed', () => {
  const parsed = parseCredentialFile('# comment\nAWSAccessKeyId = AK1\r\nAWSSecretKey=s/e=cret \nOther=x\n');
  assert.deepEqual(parsed, { accessKeyId: 'AK1', secretKey: 's/e=cret' });
  assert.deepEqual(parseCredentialFile('nothing'), { accessKeyId: undefined, secretKey: undefined });
});

test('a credential file wins over keys; keys alone work; none gives undefined', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  const file = join(dir, 'cfn-credentials');
  writeFileSync(file, 'AWSAccessKeyId=FILEKEY\nAWSSecretKey=FILESECRET\n');
  assert.equal(loadCredentials({ credentialFile: file, accessKey: 'A', secretKey: 'S' })?.accessKeyId, 'FILEKEY');
  assert.deepEqual(loadCredentials({ accessKey: 'A', secretKey: 'S' }), { accessKeyId: 'A', secretKey: 'S', origin: 'command line' });
  assert.equal(loadCredentials({}), undefined);
  assert.equal(loadCredentials({ useDefaultFile: true, paths: { cfnConfigDir: join(dir, 'none') } }), undefined);
  assert.equal(loadCredentials({ useDefaultFile: true, paths: { cfnConfigDir: dir } })?.secretKey, 'FILESECRET');
});

test('an incomplete or missing credential file, or half a key pair, is an error naming what is wrong', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  const file = join(dir, 'partial');
  writeFileSync(file, 'AWSAccessKeyId=ONLY\n');
  assert.throws(
    () => loadCredentials({ credentialFile: file }),
    (error: ExitError) => /no AWSSecretKey= line/.test(error.message),
  );
  assert.throws(() => loadCredentials({ credentialFile: join(dir, 'missing') }), /cannot read the credential file/);
  assert.throws(() => loadCredentials({ accessKey: 'A' }), /only --access-key was given/);
});

test('an existing default credential file that cannot be read is an error naming it, not "no credentials"', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // A directory where the file belongs fails to read for root too (EISDIR), like root's 0600 file for another user (EACCES).
  mkdirSync(join(dir, 'cfn-credentials'));
  assert.throws(
    () => loadCredentials({ useDefaultFile: true, paths: { cfnConfigDir: dir } }),
    (error: ExitError) => error.code === 1 && error.message.includes(`cannot read the credential file ${join(dir, 'cfn-credentials')}`),
  );
});

test('an empty key or secret is named as empty, and no message shows the secret', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cfn-creds-'));
  const file = join(dir, 'cfn-credentials');
  writeFileSync(file, 'AWSAccessKeyId=AK\r\nAWSSecretKey=   \r\n');
  assert.throws(
    () => loadCredentials({ credentialFile: file }),
    (error: ExitError) => /has an empty AWSSecretKey= value/.test(error.message),
  );
  writeFileSync(file, '\uFEFFAWSAccessKeyId = \nAWSSecretKey=TOPSECRET\n');
  assert.throws(
    () => loadCredentials({ credentialFile: file }),
    (error: ExitError) => /has an empty AWSAccessKeyId= value/.test(error.message) && !error.message.includes('TOPSECRET'),
  );
  writeFileSync(file, '\uFEFFAWSAccessKeyId=AK\r\nAWSSecretKey = s3cr=t\r\n');
  assert.deepEqual(loadCredentials({ credentialFile: file }), { accessKeyId: 'AK', secretKey: 's3cr=t', origin: file });
});
