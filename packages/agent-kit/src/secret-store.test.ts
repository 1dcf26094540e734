import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_KEYRING_SERVICE, SECRET_FILE_NAME, openSecretStore } from './secret-store.ts';
import { SecretStoreError } from './secret-store-error.ts';

test('the default store is the file credentials.json in the agent state dir (HEARTH_STATE_DIR, or under HEARTH_ROOT)', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'hearth-secrets-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  assert.equal(SECRET_FILE_NAME, 'credentials.json');
  const fromRoot = openSecretStore({}, { HEARTH_ROOT: root });
  assert.equal(fromRoot.backend, 'file');
  assert.equal(fromRoot.location, join(root, '/var/lib/hearth/credentials.json'));
  const fromStateDir = openSecretStore({ backend: 'file' }, { HEARTH_STATE_DIR: join(root, 'state') });
  assert.equal(fromStateDir.location, join(root, 'state', 'credentials.json'));
  await fromStateDir.set('deploy_password', 'p');
  assert.equal((await stat(join(root, 'state', 'credentials.json'))).mode & 0o7777, 0o600);
  assert.equal(await openSecretStore({}, { HEARTH_STATE_DIR: join(root, 'state') }).get('deploy_password'), 'p');
  assert.equal(openSecretStore({ path: join(root, 'elsewhere.json') }).location, join(root, 'elsewhere.json'));
});

test('the keyring backend is chosen by config, with its service name, and loads nothing until used', () => {
  const store = openSecretStore({ backend: 'keyring' });
  assert.equal(store.backend, 'keyring');
  assert.equal(store.location, `keyring service "${DEFAULT_KEYRING_SERVICE}"`);
  assert.equal(DEFAULT_KEYRING_SERVICE, 'hearth-agent');
  assert.equal(openSecretStore({ backend: 'keyring', service: 'my-agent' }).location, 'keyring service "my-agent"');
});

test('a config naming an unknown backend, or an option of the other backend, is refused with what to write instead', () => {
  const refused = (config: Parameters<typeof openSecretStore>[0], pattern: RegExp) =>
    assert.throws(
      () => openSecretStore(config),
      (error: unknown) => error instanceof SecretStoreError && error.code === 'ERR_SECRET_CONFIG' && pattern.test(error.message),
    );
  refused({ backend: 'vault' }, /unknown secret store backend "vault"; use one of: file, keyring/);
  refused({ backend: '' }, /unknown secret store backend ""/);
  refused({ backend: 'file', service: 'x' }, /`service` applies to the keyring backend only/);
  refused({ backend: 'keyring', path: '/x' }, /`path` applies to the file backend only/);
  refused({ backend: 'keyring', service: '' }, /the service must be a non-empty string/);
});
