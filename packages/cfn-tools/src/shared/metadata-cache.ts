// The last metadata cfn-tools retrieved: `<cfnCacheDir>/last_metadata` and, per resource,
// `last_metadata_<resource>` (dir 0700, files 0600, written atomically), as heat-cfntools keeps them.
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '@hearth/agent-kit/atomic-file';
import type { AgentPaths } from '@hearth/agent-kit/paths';
import { parsePyJson, pyJsonDumps, pyPlainData } from '@hearth/agent-kit/python-json';

// Python's `==` on the parsed metadata (1 == 1.0 == True, key order ignored): whether it changed.
export { jsonEqual } from '@hearth/agent-kit/python-equal';

/** The cache files for a resource: `resourceFile` is `last_metadata_<resource>` (or `last_metadata` without one). */
export interface MetadataCacheFiles {
  lastFile: string;
  resourceFile: string;
}

/** The cache file names in `<cfnCacheDir>`. */
export function metadataCacheFiles(paths: Pick<AgentPaths, 'cfnCacheDir'>, resource?: string): MetadataCacheFiles {
  const lastFile = join(paths.cfnCacheDir, 'last_metadata');
  return { lastFile, resourceFile: resource ? `${lastFile}_${resource}` : lastFile };
}

/** A JSON file's parsed content: `missing` when it cannot be read, `invalid` when it is not JSON. */
export type JsonFileRead = { kind: 'ok'; value: unknown } | { kind: 'missing'; reason: string } | { kind: 'invalid'; reason: string };

/**
 * Reads and parses a JSON file as json.load does (floats stay PyFloat, big integers PyBigInt) without throwing;
 * bytes that are not UTF-8 make it `invalid` (never U+FFFD).
 */
export function readJsonFile(path: string): JsonFileRead {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    return { kind: 'missing', reason: (error as Error).message };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { kind: 'invalid', reason: `${path} is not UTF-8 text` };
  }
  try {
    return { kind: 'ok', value: pyPlainData(parsePyJson(text)) };
  } catch (error) {
    return { kind: 'invalid', reason: `${path} is not JSON: ${(error as Error).message}` };
  }
}

/** The cached metadata to compare new metadata with: the resource's file, else `last_metadata`; undefined if neither is readable JSON. */
export function readCachedMetadata(files: MetadataCacheFiles): unknown {
  for (const path of [files.resourceFile, files.lastFile]) {
    const read = readJsonFile(path);
    if (read.kind === 'ok') return read.value;
  }
  return undefined;
}

/** Writes `metadata` to `last_metadata` and (with a resource) `last_metadata_<resource>`, atomically, 0600 in a 0700 dir. */
export async function writeMetadataCache(files: MetadataCacheFiles, cacheDir: string, metadata: unknown): Promise<void> {
  await mkdir(cacheDir, { recursive: true, mode: 0o700 });
  const text = pyJsonDumps(metadata);
  await writeFileAtomic(files.lastFile, text, { mode: 0o600 });
  if (files.resourceFile !== files.lastFile) await writeFileAtomic(files.resourceFile, text, { mode: 0o600 });
}
