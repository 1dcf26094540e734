// The keyring part of `hearth-agent clean`: the Secret Service items of every keyring service the agent's config
// reads its secrets from. They are this instance's credentials as much as /var/lib/hearth/credentials.json is, and
// gnome-keyring keeps them in the home directory that goes into the captured image. The keyring is only reached
// when a config names it: a plain file-store VM has no session bus, and probing one would only cost time.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { iniValue, loadIniFiles } from '@hearth/agent-kit/ini';
import { agentPaths } from '@hearth/agent-kit/paths';
import { DEFAULT_KEYRING_SERVICE, openSecretStore } from '@hearth/agent-kit/secret-store';

/** The keyring services named by the agent's config, and the config files that could not be read. */
export interface KeyringServices {
  /** Services to empty, sorted. */
  services: string[];
  /** `<file>: <why>` for each config file that exists but could not be read. */
  unreadable: string[];
}

/** The collector groups whose secret may live in a store (collect-config's `[hearth]` and `[cfn]`). */
const STORE_GROUPS = ['hearth', 'cfn'];

/**
 * The keyring services the config files name: `[hearth]`/`[cfn] secret_store = keyring` in os-collect-config.conf
 * (`secret_store_service`, default hearth-agent), and `HearthSecretStore=keyring` in cfn-credentials (the cfn
 * tools use hearth-agent). Read before clean removes those files.
 */
export function keyringServices(env: NodeJS.ProcessEnv): KeyringServices {
  const paths = agentPaths(env);
  const services = new Set<string>();
  const unreadable: string[] = [];
  try {
    const config = loadIniFiles([paths.collectConfigFile]);
    for (const group of STORE_GROUPS) {
      if (iniValue(config, group, 'secret_store') !== 'keyring') continue;
      services.add(iniValue(config, group, 'secret_store_service') || DEFAULT_KEYRING_SERVICE);
    }
  } catch (error) {
    unreadable.push(`${paths.collectConfigFile}: ${(error as Error).message}`);
  }
  const credentialFile = join(paths.cfnConfigDir, 'cfn-credentials');
  try {
    if (/^\s*HearthSecretStore\s*=\s*keyring\s*$/m.test(readFileSync(credentialFile, 'utf8'))) services.add(DEFAULT_KEYRING_SERVICE);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') unreadable.push(`${credentialFile}: ${(error as Error).message}`);
  }
  return { services: [...services].sort(), unreadable };
}

/** What cleaning the keyring did: the items removed (or, dry, to remove) and the services it could not clean. */
export interface KeyringCleanResult {
  removed: Array<{ service: string; name: string }>;
  /** Each service it could not list or empty, with the store's message (which says how to fix it). */
  failed: Array<{ service: string; message: string }>;
}

/** Removes (or with dryRun lists) every item of each keyring service. */
export async function cleanKeyring(services: readonly string[], dryRun: boolean, env: NodeJS.ProcessEnv): Promise<KeyringCleanResult> {
  const result: KeyringCleanResult = { removed: [], failed: [] };
  for (const service of services) {
    try {
      const store = openSecretStore({ backend: 'keyring', service }, env);
      for (const name of await store.list()) {
        if (!dryRun) await store.delete(name);
        result.removed.push({ service, name });
      }
    } catch (error) {
      result.failed.push({ service, message: (error as Error).message });
    }
  }
  return result;
}
