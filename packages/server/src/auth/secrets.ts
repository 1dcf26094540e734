import { createHmac, randomBytes } from 'node:crypto';

/**
 * Secrets derived from the master key: nothing secret is stored in clear. The same derived
 * secret later verifies EC2 signatures and keystone passwords, so it is a plain string.
 */
export class SecretDeriver {
  readonly #key: Buffer;

  constructor(masterKey: string) {
    if (masterKey.length < 16) throw new Error('the secret key must be at least 16 characters long');
    this.#key = Buffer.from(masterKey, 'utf8');
  }

  /** The secret access key of an agent credential, derived from its access key id. */
  agentSecret(accessKeyId: string): string {
    return this.derive(`agent:${accessKeyId}`).slice(0, 40);
  }

  /** The capability token that lets anyone holding a deployment's signal URL signal it. */
  deploymentSignalToken(deploymentId: string): string {
    return this.derive(`deployment-signal:${deploymentId}`).slice(0, 43);
  }

  /** The Swift temp-URL key of a credential (its temp URLs die with it). */
  tempUrlKey(accessKeyId: string): string {
    return this.derive(`temp-url:${accessKeyId}`);
  }

  /** The key that signs hearth's keystone tokens. */
  tokenKey(): Buffer {
    return Buffer.from(this.derive('keystone-token'), 'base64url');
  }

  private derive(purpose: string): string {
    return createHmac('sha256', this.#key).update(purpose).digest('base64url');
  }
}

/**
 * What a HEARTH_SIGNAL URL's token signs: the deployment, its action and, once its server's delete has
 * detached it and it is attached again, its new access key (a URL without one is bound to no key).
 */
export function signalTokenSubject(deploymentId: string, action: string, key: string | null): string {
  return key === null ? `${deploymentId}/${action}` : `${deploymentId}/${action}/${key}`;
}

/**
 * A new access key id: 32 lowercase hex characters, the shape Heat's EC2 keys have. Its derived
 * secret never starts with `-`: images pass it on command lines (`cfn-get-metadata --secret-key
 * KEY`, `cfn-signal`), where argparse and getopt would read it as an option (one key in 64).
 * Keys issued before this rule keep their secrets: the derivation itself is unchanged.
 */
export function newAccessKeyId(secrets: SecretDeriver): string {
  for (;;) {
    const id = randomBytes(16).toString('hex');
    if (!secrets.agentSecret(id).startsWith('-')) return id;
  }
}

/**
 * A new random token (admin token, secret key) of 32 random bytes, base64url. Never starts with
 * `-`: operators and images pass these on command lines (`cfn-signal --secret-key KEY`), and
 * argparse and getopt read a leading dash as an option, so one key in 64 would break them.
 */
export function newRandomToken(): string {
  for (;;) {
    const token = randomBytes(32).toString('base64url');
    if (!token.startsWith('-')) return token;
  }
}

export { secretsEqual } from '@hearth/protocol/signing';
