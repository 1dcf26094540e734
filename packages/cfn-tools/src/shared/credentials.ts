// The access key pair cfn-tools sign with: `--access-key/--secret-key`, or a credential file in
// heat-cfntools' format (`AWSAccessKeyId=...` and `AWSSecretKey=...` lines, `/etc/cfn/cfn-credentials`).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import type { AgentPaths } from '@hearth/agent-kit/paths';

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

/**
 * Parses a credential file as heat-cfntools does: each line `KEY *= *value` (surrounding blanks
 * trimmed); unknown keys and other lines are ignored. Returns undefined for a key that is absent.
 */
export function parseCredentialFile(text: string): { accessKeyId: string | undefined; secretKey: string | undefined } {
  const values = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const match = /^\s*(AWSAccessKeyId|AWSSecretKey)\s*=\s*(.*?)\s*$/.exec(line);
    if (match) values.set(match[1]!, match[2]!);
  }
  return { accessKeyId: values.get('AWSAccessKeyId'), secretKey: values.get('AWSSecretKey') };
}

/** Reads and parses a credential file; throws ExitError(1) naming the file and the missing key. */
export function readCredentialFile(path: string): Credentials {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ExitError(1, `cannot read the credential file ${path}: ${(error as Error).message}`);
  }
  const { accessKeyId, secretKey } = parseCredentialFile(text);
  if (!accessKeyId || !secretKey) {
    const [key, value] = !accessKeyId ? ['AWSAccessKeyId', accessKeyId] : ['AWSSecretKey', secretKey];
    const problem = value === undefined ? `has no ${key}= line` : `has an empty ${key}= value`;
    throw new ExitError(1, `the credential file ${path} ${problem}; it needs AWSAccessKeyId=<key> and AWSSecretKey=<secret>`);
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
}

/**
 * The credentials to sign with, in the original's order: a credential file wins, then an access and
 * secret key given together; undefined when there are none (callers then use local metadata).
 * One of `--access-key`/`--secret-key` without the other is an error.
 */
export function loadCredentials(options: LoadCredentialsOptions): Credentials | undefined {
  if (options.credentialFile) return readCredentialFile(options.credentialFile);
  const { accessKey, secretKey } = options;
  if (accessKey && secretKey) return { accessKeyId: accessKey, secretKey, origin: 'command line' };
  if (accessKey || secretKey) {
    throw new ExitError(1, `--access-key and --secret-key go together; only ${accessKey ? '--access-key' : '--secret-key'} was given`);
  }
  if (options.useDefaultFile && options.paths) {
    const path = defaultCredentialFile(options.paths);
    // Only a missing file means "none"; one that exists but cannot be read (root's 0600 file, a directory)
    // is an error naming it, not a "no credentials" that tells the user to write a file already there.
    if (!existsSync(path)) return undefined;
    return readCredentialFile(path);
  }
  return undefined;
}
