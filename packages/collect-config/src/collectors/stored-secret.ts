// A collector's secret access key: `[<group>] secret_access_key` when the config gives one, else the
// agent-kit SecretStore named by `[<group>] secret_store` (file or keyring), under `<group>/<access_key_id>`,
// so an operator can keep the credential out of /etc/os-collect-config.conf. Messages name the store and the
// command that fixes it, never the secret.
import { join } from 'node:path';
import {
  ExitError,
  openSecretStore,
  SECRET_FILE_NAME,
  SecretStoreError,
  type SecretStore,
  type SecretStoreConfig,
} from '@hearth/agent-kit';
import type { CollectOptions, GroupValues } from '../options.ts';
import { setting } from './types.ts';

/** What looking the secret up gave: the secret, or why there is none (an outcome of the collector). */
export type SecretLookup =
  { kind: 'secret'; secret: string } | { kind: 'not-configured'; reason: string } | { kind: 'unavailable'; reason: string };

/** The name a collector's secret is stored under: `hearth/<access_key_id>`, `cfn/<access_key_id>`. */
export function storedSecretName(group: string, accessKeyId: string): string {
  return `${group}/${accessKeyId}`;
}

/** The store config of `[group] secret_store*`, or undefined when no store is configured. */
export function secretStoreConfig(options: CollectOptions, group: string): SecretStoreConfig | undefined {
  const backend = setting(options, group, 'secret_store');
  if (backend === undefined) return undefined;
  const path = setting(options, group, 'secret_store_path');
  const service = setting(options, group, 'secret_store_service');
  return {
    backend,
    // The file backend's default follows the options' paths (HEARTH_ROOT, HEARTH_STATE_DIR) as every other default.
    ...(backend === 'file' ? { path: path ?? join(options.paths.stateDir, SECRET_FILE_NAME) } : path !== undefined ? { path } : {}),
    ...(service !== undefined ? { service } : {}),
  };
}

/** `hearth-agent secret [--backend keyring --service S | --path P] set NAME < FILE`, with only the flags the config needs. */
export function secretSetCommand(options: CollectOptions, group: string, name: string): string {
  const flags: string[] = [];
  const backend = setting(options, group, 'secret_store');
  if (backend === 'keyring') flags.push('--backend keyring');
  const path = setting(options, group, 'secret_store_path');
  if (path !== undefined) flags.push(`--path ${path}`);
  const service = setting(options, group, 'secret_store_service');
  if (service !== undefined) flags.push(`--service ${service}`);
  return ['hearth-agent secret', ...flags, `set ${name} < FILE`].join(' ');
}

// Stores live as long as the process: the keyring backend probes the Secret Service once per store object.
const stores = new Map<string, SecretStore>();

function storeFor(config: SecretStoreConfig): SecretStore {
  const key = JSON.stringify([config.backend, config.path, config.service]);
  let store = stores.get(key);
  if (store === undefined) {
    store = openSecretStore(config);
    stores.set(key, store);
  }
  return store;
}

/**
 * The secret of `[group]`: the config's `secret_access_key` if set; else, with `secret_store` set, the stored
 * `<group>/<access_key_id>`. A missing secret or a store that cannot be used is "unavailable" with what to do;
 * no store and no key is "not configured", as before stores existed.
 */
export async function lookUpSecret(options: CollectOptions, group: string, accessKeyId: string): Promise<SecretLookup> {
  const configured = setting(options, group, 'secret_access_key');
  if (configured !== undefined) return { kind: 'secret', secret: configured };
  const config = secretStoreConfig(options, group);
  if (config === undefined) return { kind: 'not-configured', reason: `No [${group}] secret_access_key or secret_store configured.` };
  const name = storedSecretName(group, accessKeyId);
  let store: SecretStore;
  let secret: string | undefined;
  try {
    store = storeFor(config);
    secret = await store.get(name);
  } catch (error) {
    const message = error instanceof SecretStoreError ? error.message : `secret store: ${(error as Error).message}`;
    return { kind: 'unavailable', reason: `cannot read secret "${name}" ([${group}] secret_store = ${config.backend}): ${message}` };
  }
  if (secret === undefined) {
    return {
      kind: 'unavailable',
      reason: `no secret "${name}" in ${store.location} ([${group}] secret_store = ${config.backend}); store it with: ${secretSetCommand(options, group, name)}`,
    };
  }
  return { kind: 'secret', secret };
}

/** The groups whose secret_access_key may come from a secret store. */
const SECRET_STORE_GROUPS = ['hearth', 'cfn'] as const;

/** The store setting that belongs to each backend, as a bad combination's message names it. */
const BACKEND_OF_SETTING = { secret_store_path: 'file', secret_store_service: 'keyring' } as const;

/**
 * A bad `[group] secret_store*` combination is a bad configuration (exit 1, as every other bad setting here) now,
 * not a failing source on every poll. The message names the setting, its value and the change that fixes it.
 */
function checkSecretStore(values: GroupValues, group: string): void {
  const text = (name: string): string | undefined => {
    const value = values[name];
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const backend = text('secret_store');
  if (backend !== undefined) {
    try {
      // Opening reads nothing: it only checks that the backend is known.
      openSecretStore({ backend });
    } catch (error) {
      if (error instanceof SecretStoreError) throw new ExitError(1, `[${group}] secret_store: ${error.message}`);
      throw error;
    }
  }
  for (const [name, owner] of Object.entries(BACKEND_OF_SETTING)) {
    const value = text(name);
    if (value === undefined || backend === owner) continue;
    const now = backend === undefined ? `without [${group}] secret_store` : `with [${group}] secret_store = ${backend}`;
    throw new ExitError(
      1,
      `[${group}] ${name} = ${value} is given ${now}, but it applies to secret_store = ${owner} only: ` +
        `set [${group}] secret_store = ${owner}, or remove ${name}`,
    );
  }
}

/** Checks every group's secret store settings when the options are read (see checkSecretStore). */
export function checkSecretStores(groups: Readonly<Record<string, GroupValues>>): void {
  for (const group of SECRET_STORE_GROUPS) checkSecretStore(groups[group] ?? {}, group);
}
