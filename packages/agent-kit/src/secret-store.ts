import { join } from 'node:path';
import { agentPaths } from './paths.ts';
import { createFileSecretStore } from './secret-store-file.ts';
import { createKeyringSecretStore } from './secret-store-keyring.ts';
import { SecretStoreError } from './secret-store-error.ts';

/** Where an agent keeps the credentials it needs on the VM (keystone passwords, access keys, tokens). */
export interface SecretStore {
  /** Which backend this is. */
  readonly backend: SecretBackend;
  /** Where the secrets live, for messages: the file's path, or `keyring service "<service>"`. */
  readonly location: string;
  /** The secret stored under `name`, or undefined when there is none. */
  get(name: string): Promise<string | undefined>;
  /** Stores `value` under `name`, replacing any earlier value. */
  set(name: string, value: string): Promise<void>;
  /** Removes the secret under `name`; true when there was one. */
  delete(name: string): Promise<boolean>;
  /** The names of all stored secrets, sorted. */
  list(): Promise<string[]>;
}

/** The backends openSecretStore knows. */
export const SECRET_BACKENDS = ['file', 'keyring'] as const;
/** One of SECRET_BACKENDS. */
export type SecretBackend = (typeof SECRET_BACKENDS)[number];

/** How to open a secret store, usually read from the agent's config. */
export interface SecretStoreConfig {
  /** `file` (root-only 0600 file) or `keyring` (Secret Service through @github/keytar). Default `file`. */
  backend?: string;
  /** The file backend's file. Default `<agentPaths().stateDir>/credentials.json`. */
  path?: string;
  /** The keyring backend's service name (the `service` attribute of each item). Default `hearth-agent`. */
  service?: string;
}

/** File name of the file backend's store inside the agent state dir. */
export const SECRET_FILE_NAME = 'credentials.json';
/** Keyring service name when the config gives none. */
export const DEFAULT_KEYRING_SERVICE = 'hearth-agent';

/**
 * Opens the store the config names (default: the file `<stateDir>/credentials.json`). Nothing is read yet:
 * each operation checks the file's mode and owner, or reaches the Secret Service, when it runs.
 */
export function openSecretStore(config: SecretStoreConfig = {}, env: NodeJS.ProcessEnv = process.env): SecretStore {
  const backend = config.backend ?? 'file';
  if (backend === 'file') {
    if (config.service !== undefined)
      throw new SecretStoreError('ERR_SECRET_CONFIG', 'secret store: `service` applies to the keyring backend only');
    return createFileSecretStore(config.path ?? join(agentPaths(env).stateDir, SECRET_FILE_NAME));
  }
  if (backend === 'keyring') {
    if (config.path !== undefined) throw new SecretStoreError('ERR_SECRET_CONFIG', 'secret store: `path` applies to the file backend only');
    return createKeyringSecretStore({ service: config.service ?? DEFAULT_KEYRING_SERVICE });
  }
  throw new SecretStoreError(
    'ERR_SECRET_CONFIG',
    `unknown secret store backend ${JSON.stringify(backend)}; use one of: ${SECRET_BACKENDS.join(', ')}`,
  );
}
