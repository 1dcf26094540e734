// The secret key of an access key kept in the agent's SecretStore (`hearth-agent secret set cfn/<access key> < FILE`)
// instead of in clear in the credential file or on the command line, where every user can read it in /proc.
// The collectors' cfn group reads the same name, so one stored secret serves os-collect-config and the cfn tools.
import { ExitError } from '@hearth/agent-kit/exit';
import { openSecretStore, SECRET_BACKENDS, type SecretStore } from '@hearth/agent-kit/secret-store';
import { SecretStoreError } from '@hearth/agent-kit/secret-store-error';

/** The name the secret of `accessKeyId` is stored under: `cfn/<access key id>`, as the cfn collector reads it. */
export function storedSecretName(accessKeyId: string): string {
  return `cfn/${accessKeyId}`;
}

/** Where the lookup was asked from, for messages: what is missing there, and the other way to give the secret. */
export interface StoredSecretRequest {
  accessKeyId: string;
  /** `file` (default: `<stateDir>/credentials.json`, following HEARTH_ROOT/HEARTH_STATE_DIR) or `keyring`. */
  backend?: string | undefined;
  /** What lacks the secret, e.g. `the credential file /etc/cfn/cfn-credentials has no AWSSecretKey= line`. */
  lacking: string;
  /** The other way to give it, e.g. `add AWSSecretKey=<secret> to /etc/cfn/cfn-credentials`. */
  otherwise: string;
  /** Environment the file store's default path comes from. Default process.env. */
  env?: NodeJS.ProcessEnv | undefined;
}

/** The `hearth-agent secret ... set` command that stores `name` in `backend`. */
function setCommand(backend: string, name: string): string {
  return `hearth-agent secret ${backend === 'file' ? '' : `--backend ${backend} `}set ${name} < FILE`;
}

/**
 * Reads `cfn/<accessKeyId>` from the agent's SecretStore. ExitError(1), naming the store and the command that
 * fixes it, when the backend is unknown, the store cannot be used (e.g. a 0644 file) or holds no such secret.
 * No message ever holds the secret.
 */
export async function readStoredSecret(request: StoredSecretRequest): Promise<string> {
  const backend = request.backend ?? 'file';
  const name = storedSecretName(request.accessKeyId);
  if (!(SECRET_BACKENDS as readonly string[]).includes(backend)) {
    throw new ExitError(
      1,
      `${request.lacking}, and its secret store ${JSON.stringify(backend)} is unknown; use one of: ${SECRET_BACKENDS.join(', ')}`,
    );
  }
  let store: SecretStore | undefined;
  let secret: string | undefined;
  try {
    store = openSecretStore({ backend }, request.env ?? process.env);
    secret = await store.get(name);
  } catch (error) {
    const reason = error instanceof SecretStoreError ? error.message : `secret store: ${(error as Error).message}`;
    throw new ExitError(1, `${request.lacking}, and its secret "${name}" cannot be read from the ${backend} secret store: ${reason}`);
  }
  if (secret === undefined) {
    throw new ExitError(
      1,
      `${request.lacking}, and ${store.location} holds no secret "${name}"; store it with: ${setCommand(backend, name)} (or ${request.otherwise})`,
    );
  }
  return secret;
}
