// cfn-get-metadata: print a stack resource's metadata (DescribeStackResource, else the local fallbacks).
import { createLogger } from '@hearth/agent-kit/logger';
import { agentPaths } from '@hearth/agent-kit/paths';
import { loadCredentials } from '../shared/credentials.ts';
import type { HttpFunction } from '../shared/describe-stack-resource.ts';
import { fetchMetadata } from '../shared/fetch-metadata.ts';
import { pythonJsonDumps } from '../shared/python-json.ts';
import { valueAtKey } from './key-path.ts';
import { CFN_GET_METADATA_USAGE, parseCfnGetMetadataArgs } from './options.ts';

/** Injected dependencies (tests). */
export interface CfnGetMetadataDeps {
  env?: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  http?: HttpFunction;
}

/**
 * Runs cfn-get-metadata: prints the metadata as json.dumps does (or the value at `-k`; nothing when the key
 * leads nowhere or to null, as the original), refreshing the cache. Exits 1 when no metadata could be had.
 */
export async function cfnGetMetadataMain(argv: string[], deps: CfnGetMetadataDeps = {}): Promise<number> {
  const options = parseCfnGetMetadataArgs(argv);
  const stdout = deps.stdout ?? process.stdout;
  if (options.help) {
    stdout.write(`${CFN_GET_METADATA_USAGE}\n`);
    return 0;
  }
  const log = createLogger({ name: 'cfn-get-metadata', level: 'warn', format: 'text', stream: deps.stderr ?? process.stderr });
  const env = deps.env ?? process.env;
  const credentials = await loadCredentials({
    credentialFile: options.credentialFile,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    env,
  });
  const fetched = await fetchMetadata({
    stack: options.stack,
    resource: options.resource,
    credentials,
    url: options.url,
    region: options.region,
    insecure: options.insecure,
    paths: agentPaths(env),
    log,
    ...(deps.http !== undefined && { http: deps.http }),
  });
  const value = options.key === undefined ? fetched.metadata : valueAtKey(fetched.metadata, options.key);
  if (value !== undefined && (value !== null || options.key === undefined)) stdout.write(`${pythonJsonDumps(value)}\n`);
  return 0;
}
