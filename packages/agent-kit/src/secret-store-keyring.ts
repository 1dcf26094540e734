import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { SecretStore } from './secret-store.ts';
import { SecretStoreError, checkSecretName, checkSecretValue } from './secret-store-error.ts';
import { PROBE_PREFIX, noAnswerMessage, probeInChild } from './secret-store-keyring-probe.ts';

/** The part of the keytar API this backend uses (@github/keytar's, typed here so the optional module is never needed to type-check). */
export interface KeytarApi {
  getPassword: (service: string, account: string) => Promise<string | null>;
  setPassword: (service: string, account: string, password: string) => Promise<void>;
  deletePassword: (service: string, account: string) => Promise<boolean>;
  findCredentials: (service: string) => Promise<Array<{ account: string; password: string }>>;
}

/** The optional dependency that talks to the Secret Service (libsecret over D-Bus). */
export const KEYTAR_MODULE = '@github/keytar';

/** Options of createKeyringSecretStore. */
export interface KeyringSecretStoreOptions {
  /** The `service` attribute of every item this store reads and writes. */
  service: string;
  /**
   * Loads the keytar API. Default: require('@github/keytar') on the first operation, after a child process has
   * probed the Secret Service with it. A keytar given here (tests) is probed in this process instead.
   */
  loadKeytar?: () => KeytarApi;
  /** How long the first operation waits for the Secret Service to answer its probe, in ms. Default 10000. */
  probeTimeoutMs?: number;
  /** Environment shown in messages (DBUS_SESSION_BUS_ADDRESS). Default process.env. */
  env?: NodeJS.ProcessEnv;
}

const DEFAULT_PROBE_TIMEOUT_MS = 10_000;

/** The error's message, or the thing itself as text. */
function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** require('@github/keytar'), turning "not installed" and "native addon did not load" into messages that say what to do. */
function requireKeytar(): KeytarApi {
  const require = createRequire(import.meta.url);
  try {
    return require(KEYTAR_MODULE) as KeytarApi;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'MODULE_NOT_FOUND' && message.includes(KEYTAR_MODULE)) {
      throw new SecretStoreError(
        'ERR_SECRET_KEYRING_MODULE',
        `the keyring secret backend needs ${KEYTAR_MODULE}, an optional dependency of @hearth/agent-kit that is not installed: ` +
          `install it (npm install ${KEYTAR_MODULE}, not with --omit=optional; it needs libsecret-1-0 at run time) or use the file backend`,
      );
    }
    throw new SecretStoreError(
      'ERR_SECRET_KEYRING_MODULE',
      `could not load ${KEYTAR_MODULE} on ${process.platform}-${process.arch}: ${message}; ` +
        `it needs libsecret-1-0 (apt-get install -y libsecret-1-0), or use the file backend`,
    );
  }
}

/** Whether this is a Node single executable (hearth-agent's own binary), where process.execPath is not node. */
function inSingleExecutable(): boolean {
  try {
    return (createRequire(import.meta.url)('node:sea') as { isSea(): boolean }).isSea();
  } catch {
    return false;
  }
}

/** `promise`, or a rejection after `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(noAnswerMessage(ms))), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Stores, reads back and removes a random item: the only way to tell "no Secret Service" or "locked" from "no such secret". */
async function probe(keytar: KeytarApi, service: string): Promise<void> {
  const account = PROBE_PREFIX + randomBytes(6).toString('hex');
  const token = randomBytes(16).toString('hex');
  await keytar.setPassword(service, account, token);
  const readBack = await keytar.getPassword(service, account);
  await keytar.deletePassword(service, account);
  if (readBack !== token) throw new Error('an item just stored could not be read back');
}

/**
 * The keyring backend: each secret is a Secret Service item with attributes `service` and `account` (= the
 * secret's name), through the keytar API. The first operation loads @github/keytar and proves the Secret Service
 * is reachable and unlocked with a store/read/remove probe; when it is not, every operation rejects with
 * ERR_SECRET_KEYRING_UNAVAILABLE saying why, rather than answering "no such secret".
 */
export function createKeyringSecretStore(options: KeyringSecretStoreOptions): SecretStore {
  const { service } = options;
  const loadKeytar = options.loadKeytar ?? requireKeytar;
  const probeTimeoutMs = options.probeTimeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS;
  const env = options.env ?? process.env;
  // The real module is probed in a child that can be killed: a stuck libsecret call would pin this process.
  // A single executable cannot run `node -e`, so it probes in-process, as a keytar given here (tests) is.
  const probeKeytar =
    options.loadKeytar || inSingleExecutable()
      ? (keytar: KeytarApi) => withTimeout(probe(keytar, service), probeTimeoutMs)
      : () => probeInChild(createRequire(import.meta.url).resolve(KEYTAR_MODULE), service, probeTimeoutMs);
  if (typeof service !== 'string' || service === '') {
    throw new SecretStoreError(
      'ERR_SECRET_CONFIG',
      `keyring secret store: the service must be a non-empty string, got ${JSON.stringify(service)}`,
    );
  }
  const location = `keyring service ${JSON.stringify(service)}`;
  let ready: Promise<KeytarApi> | undefined;

  /** keytar, once loaded and probed; a failed probe is tried again on the next operation. */
  function keytarReady(): Promise<KeytarApi> {
    ready ??= (async () => {
      const keytar = loadKeytar();
      try {
        await probeKeytar(keytar);
      } catch (error) {
        const bus = env.DBUS_SESSION_BUS_ADDRESS
          ? `DBUS_SESSION_BUS_ADDRESS=${env.DBUS_SESSION_BUS_ADDRESS}`
          : 'DBUS_SESSION_BUS_ADDRESS is unset';
        throw new SecretStoreError(
          'ERR_SECRET_KEYRING_UNAVAILABLE',
          `no usable Secret Service for ${location}: ${describe(error)} (${bus}). The keyring backend needs a D-Bus session bus ` +
            `with an unlocked keyring, e.g. run the agent under dbus-run-session after gnome-keyring-daemon --unlock; or use the file backend`,
        );
      }
      return keytar;
    })();
    ready.catch(() => {
      ready = undefined;
    });
    return ready;
  }

  /** Runs one keytar call, naming the secret (never its value) when it fails. */
  async function call<T>(verb: string, name: string, run: (keytar: KeytarApi) => Promise<T>): Promise<T> {
    const keytar = await keytarReady();
    try {
      return await run(keytar);
    } catch (error) {
      throw new SecretStoreError(
        'ERR_SECRET_KEYRING_FAILED',
        `${location}: could not ${verb} secret ${JSON.stringify(name)}: ${describe(error)}`,
      );
    }
  }

  /** Names the probe reserves are not secrets. */
  function checkName(name: string): void {
    checkSecretName(name);
    if (name.startsWith(PROBE_PREFIX)) {
      throw new SecretStoreError(
        'ERR_SECRET_NAME',
        `secret names starting with ${JSON.stringify(PROBE_PREFIX)} are reserved, got ${JSON.stringify(name)}`,
      );
    }
  }

  return Object.freeze({
    backend: 'keyring' as const,
    location,
    async get(name: string): Promise<string | undefined> {
      checkName(name);
      return (await call('read', name, (keytar) => keytar.getPassword(service, name))) ?? undefined;
    },
    async set(name: string, value: string): Promise<void> {
      checkName(name);
      checkSecretValue(name, value);
      await call('store', name, (keytar) => keytar.setPassword(service, name, value));
    },
    async delete(name: string): Promise<boolean> {
      checkName(name);
      return call('delete', name, (keytar) => keytar.deletePassword(service, name));
    },
    async list(): Promise<string[]> {
      const credentials = await call('list', '*', (keytar) => keytar.findCredentials(service));
      const names = new Set(credentials.map((credential) => credential.account).filter((account) => !account.startsWith(PROBE_PREFIX)));
      return [...names].sort();
    },
  });
}
