// The access key pair cfn-tools sign with: `--access-key/--secret-key`, or a credential file in
// heat-cfntools' format (`AWSAccessKeyId=...` and `AWSSecretKey=...` lines, `/etc/cfn/cfn-credentials`).
// Beyond the original, the secret may stay out of both: a file without an `AWSSecretKey=` line, or `--access-key`
// without `--secret-key`, reads `cfn/<access key>` from the agent's SecretStore (see stored-secret.ts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import type { AgentPaths } from '@hearth/agent-kit/paths';
import { readStoredSecret } from './stored-secret.ts';

/** An EC2-style access key pair. */
export interface Credentials {
  accessKeyId: string;
  secretKey: string;
  /** Where they came from: the file's path, or `command line`. */
  origin: string;
}

/** The default credential file: `<cfnConfigDir>/cfn-credentials` (`/etc/cfn/cfn-credentials`). */
export function defaultCredentialFile(paths: Pick<AgentPaths, 'cfnConfigDir'>): string {
  return join(paths.cfnConfigDir, 'cfn-credentials');
}

/** What a credential file holds; undefined for a key that is absent. */
export interface CredentialFileValues {
  accessKeyId: string | undefined;
  secretKey: string | undefined;
  /** `HearthSecretStore=file|keyring` (hearth's own line, which heat-cfntools ignores): where a missing secret is read. */
  secretStore: string | undefined;
}

/**
 * Parses a credential file as heat-cfntools does: each line `KEY *= *value` (surrounding blanks
 * trimmed); unknown keys and other lines are ignored.
 */
export function parseCredentialFile(text: string): CredentialFileValues {
  const values = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(AWSAccessKeyId|AWSSecretKey|HearthSecretStore)\s*=\s*(.*?)\s*$/.exec(line);
    if (match) values.set(match[1]!, match[2]!);
  }
  return { accessKeyId: values.get('AWSAccessKeyId'), secretKey: values.get('AWSSecretKey'), secretStore: values.get('HearthSecretStore') };
}

/**
 * Reads and parses a credential file. Without an `AWSSecretKey=` line the secret is `cfn/<AWSAccessKeyId>` in the
 * agent's SecretStore (`HearthSecretStore=`, default the file store). Throws ExitError(1) naming the file and what
 * is missing, or the store and the command that fills it.
 */
export async function readCredentialFile(path: string, env: NodeJS.ProcessEnv = process.env): Promise<Credentials> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ExitError(1, `cannot read the credential file ${path}: ${(error as Error).message}`);
  }
  const { accessKeyId, secretKey, secretStore } = parseCredentialFile(text);
  if (accessKeyId && secretKey === undefined) {
    const secret = await readStoredSecret({
      accessKeyId,
      backend: secretStore || undefined,
      lacking: `the credential file ${path} has no AWSSecretKey= line`,
      otherwise: `add AWSSecretKey=<secret> to ${path}`,
      env,
    });
    return { accessKeyId, secretKey: secret, origin: path };
  }
  if (!accessKeyId || !secretKey) {
    const [key, value] = !accessKeyId ? ['AWSAccessKeyId', accessKeyId] : ['AWSSecretKey', secretKey];
    const problem = value === undefined ? `has no ${key}= line` : `has an empty ${key}= value`;
    throw new ExitError(
      1,
      `the credential file ${path} ${problem}; it needs AWSAccessKeyId=<key>, and AWSSecretKey=<secret> or the secret stored with hearth-agent secret set cfn/<key> < FILE`,
    );
  }
  return { accessKeyId, secretKey, origin: path };
}

/** Options of loadCredentials. */
export interface LoadCredentialsOptions {
  /** `--credential-file`: read it (an unreadable or incomplete file is an error). Default none. */
  credentialFile?: string | undefined;
  /** `--access-key`. */
  accessKey?: string | undefined;
  /** `--secret-key`. */
  secretKey?: string | undefined;
  /** Fall back to `<cfnConfigDir>/cfn-credentials` when it exists (unreadable or incomplete: an error) and nothing else is given. Default false (the original's cfn-init and cfn-get-metadata never read it by themselves). */
  useDefaultFile?: boolean;
  /** Paths; needed only with useDefaultFile. */
  paths?: Pick<AgentPaths, 'cfnConfigDir'>;
  /** Environment the SecretStore's default path comes from (HEARTH_ROOT, HEARTH_STATE_DIR). Default process.env. */
  env?: NodeJS.ProcessEnv;
}

/**
 * The credentials to sign with, in the original's order: a credential file wins, then an access and
 * secret key given together; undefined when there are none (callers then use local metadata).
 * `--access-key` alone reads its secret from the agent's SecretStore (`cfn/<key>`); `--secret-key` alone is an error.
 */
export async function loadCredentials(options: LoadCredentialsOptions): Promise<Credentials | undefined> {
  if (options.credentialFile) return readCredentialFile(options.credentialFile, options.env);
  const { accessKey, secretKey } = options;
  if (accessKey && secretKey) return { accessKeyId: accessKey, secretKey, origin: 'command line' };
  if (accessKey) {
    const secret = await readStoredSecret({
      accessKeyId: accessKey,
      lacking: `--access-key ${accessKey} was given without --secret-key`,
      otherwise: 'give --secret-key',
      env: options.env,
    });
    return { accessKeyId: accessKey, secretKey: secret, origin: 'command line and secret store' };
  }
  if (secretKey) throw new ExitError(1, '--access-key and --secret-key go together; only --secret-key was given');
  if (options.useDefaultFile && options.paths) {
    const path = defaultCredentialFile(options.paths);
    // Only a missing file means "none"; one that exists but cannot be read (root's 0600 file, a directory)
    // is an error naming it, not a "no credentials" that tells the user to write a file already there.
    if (!existsSync(path)) return undefined;
    return readCredentialFile(path, options.env);
  }
  return undefined;
}
