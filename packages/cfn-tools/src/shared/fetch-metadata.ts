// Metadata for a stack resource, as heat-cfntools' Metadata.retrieve() gets it: from the server, else
// (no credentials, no endpoint, or the server unreachable) from the first readable of
// last_metadata_<res>, last_metadata, cfn-init-data; then compared with the cache and written to it.
import type { AgentPaths } from '@hearth/agent-kit/paths';
import type { Logger } from '@hearth/agent-kit/logger';
import { ExitError } from '@hearth/agent-kit/exit';
import type { Credentials } from './credentials.ts';
import { describeStackResource, MetadataServerError, type HttpFunction } from './describe-stack-resource.ts';
import { resolveCfnEndpoint } from './endpoint.ts';
import { jsonEqual, metadataCacheFiles, readCachedMetadata, readJsonFile, writeMetadataCache } from './metadata-cache.ts';

/** Options of fetchMetadata. */
export interface FetchMetadataOptions {
  /** `-s/--stack`; without it (or a resource, or credentials) only local files are read. */
  stack?: string | undefined;
  /** `-r/--resource`; also names the cache file `last_metadata_<resource>`. */
  resource?: string | undefined;
  /** From loadCredentials; undefined means local files only (the original's "No credentials!"). */
  credentials?: Credentials | undefined;
  /** `--url`; default: from cfn-boto-cfg and cfn-metadata-server. */
  url?: string | undefined;
  /** `--region`: accepted for compatibility, not used (as in the original). */
  region?: string | undefined;
  /** `-k`: skip TLS verification. Default false. */
  insecure?: boolean;
  /** Where files are; default agentPaths(). */
  paths: Pick<AgentPaths, 'heatCfntoolsDir' | 'cfnMetadataHintFile' | 'cfnCacheDir' | 'heatLocalDataPath'>;
  /** Write the cache files afterwards. Default true. */
  updateCache?: boolean;
  /** Fall back to local files when the server cannot be reached. Default true. */
  fallback?: boolean;
  /** Per-attempt timeout. Default 10000 ms. */
  timeoutMs?: number;
  /** Retries of the GET on network errors and 502/503/504. Default 2. */
  retries?: number;
  log?: Logger;
  /** Injected HTTP function (tests). */
  http?: HttpFunction;
}

/** What fetchMetadata found. */
export interface FetchedMetadata {
  metadata: unknown;
  /** `server`: DescribeStackResource; `cache`: a last_metadata file; `local`: cfn-init-data. */
  source: 'server' | 'cache' | 'local';
  /** The URL or file it came from (URL without its query). */
  origin: string;
  /** Differs from the cached copy (true when there was none). */
  changed: boolean;
  /** Why the server was not used, when it was not. */
  fallbackReason?: string;
}

function localCandidates(options: FetchMetadataOptions): Array<{ path: string; source: 'cache' | 'local' }> {
  const files = metadataCacheFiles(options.paths, options.resource);
  const candidates: Array<{ path: string; source: 'cache' | 'local' }> = [];
  if (files.resourceFile !== files.lastFile) candidates.push({ path: files.resourceFile, source: 'cache' });
  candidates.push({ path: files.lastFile, source: 'cache' }, { path: options.paths.heatLocalDataPath, source: 'local' });
  return candidates;
}

async function fromServer(options: FetchMetadataOptions): Promise<{ metadata: unknown; origin: string } | string> {
  if (!options.credentials) return 'no credentials';
  if (!options.stack || !options.resource) return 'no stack and resource given';
  const endpoint = resolveCfnEndpoint(options.paths, { url: options.url, insecure: options.insecure });
  if (!endpoint) return `no endpoint: no --url, and neither ${options.paths.cfnMetadataHintFile} nor the boto config names a host`;
  try {
    const metadata = await describeStackResource({
      endpointUrl: endpoint.url,
      stack: options.stack,
      resource: options.resource,
      credentials: options.credentials,
      insecure: endpoint.insecure,
      ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
      ...(options.retries !== undefined && { retries: options.retries }),
      ...(options.http !== undefined && { http: options.http }),
    });
    return { metadata, origin: endpoint.url };
  } catch (error) {
    if (error instanceof MetadataServerError && error.kind === 'unreachable' && options.fallback !== false) return error.message;
    if (error instanceof MetadataServerError) throw new ExitError(1, error.message);
    throw error;
  }
}

/**
 * Retrieves a resource's metadata (reference agents.md §8.1): remote when credentials, stack and resource
 * are given, else or when unreachable the first readable JSON of last_metadata_<res>, last_metadata,
 * cfn-init-data. A 4xx or an answer without Metadata is an error (ExitError 1), not a fallback.
 * Throws ExitError(1) when nothing could be read.
 */
export async function fetchMetadata(options: FetchMetadataOptions): Promise<FetchedMetadata> {
  const files = metadataCacheFiles(options.paths, options.resource);
  const cached = readCachedMetadata(files);
  const remote = await fromServer(options);
  let found: Omit<FetchedMetadata, 'changed'>;
  if (typeof remote !== 'string') {
    found = { metadata: remote.metadata, source: 'server', origin: remote.origin };
  } else {
    options.log?.warn('using local metadata', { reason: remote });
    const tried: string[] = [];
    let local: Omit<FetchedMetadata, 'changed'> | undefined;
    for (const candidate of localCandidates(options)) {
      const read = readJsonFile(candidate.path);
      if (read.kind === 'ok') {
        local = { metadata: read.value, source: candidate.source, origin: candidate.path, fallbackReason: remote };
        break;
      }
      tried.push(read.kind === 'invalid' ? read.reason : `${candidate.path} (${read.reason})`);
      if (read.kind === 'invalid') options.log?.warn('skipping local metadata that is not JSON', { file: candidate.path });
    }
    if (!local) throw new ExitError(1, `no metadata: ${remote}, and no readable local metadata (${tried.join('; ')})`);
    found = local;
  }
  const changed = cached === undefined || !jsonEqual(cached, found.metadata);
  if (options.updateCache !== false) await writeMetadataCache(files, options.paths.cfnCacheDir, found.metadata);
  options.log?.debug('metadata retrieved', { source: found.source, origin: found.origin, changed });
  return { ...found, changed };
}
