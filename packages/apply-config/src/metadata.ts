// Reading and merging the metadata files (OS_CONFIG_FILES), as os-apply-config does: missing
// files skipped, later files win, dicts merged recursively, everything else replaced.
import { existsSync, readFileSync } from 'node:fs';
import { ApplyConfigError } from './errors.ts';
import { isDict, parsePyJson, type PyDict, type PyValue } from '@hearth/agent-kit/python-json';
import { pyRepr } from './py-json.ts';

/** Deep merge: keys of `b` override those of `a`, except that two dicts under one key merge; a non-dict `b` replaces `a`. */
export function deepMerge(a: PyValue, b: PyValue): PyValue {
  if (!isDict(b)) return b;
  const merged: PyDict = new Map(isDict(a) ? a : []);
  for (const [key, value] of b) {
    const current = merged.get(key);
    merged.set(key, current !== undefined && isDict(current) ? deepMerge(current, value) : value);
  }
  return merged;
}

/** Merges parsed documents in order; empty and non-dict documents are ignored. */
export function mergeConfigs(documents: Iterable<PyValue>): PyDict {
  let merged: PyDict = new Map();
  for (const document of documents) {
    if (isDict(document) && document.size > 0) merged = deepMerge(merged, document) as PyDict;
  }
  return merged;
}

/** Reads one metadata file; a missing file is `undefined`, an unreadable or invalid one an ApplyConfigError. */
export function readMetadataFile(path: string): PyValue | undefined {
  if (!existsSync(path)) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(readFileSync(path));
  } catch (error) {
    throw new ApplyConfigError(`Could not open ${path} for reading. ${(error as Error).message}`);
  }
  try {
    return parsePyJson(text);
  } catch {
    throw new ApplyConfigError(`Could not parse metadata file: ${path}`);
  }
}

/**
 * The merged metadata: `fallback` files first (lowest priority), then `files`, in order. Empty
 * names are skipped (an empty OS_CONFIG_FILES); so are files that do not exist.
 */
export function collectConfig(files: readonly string[], fallback: readonly string[] = []): PyDict {
  const documents: PyValue[] = [];
  for (const path of [...fallback, ...files]) {
    if (!path) continue;
    const document = readMetadataFile(path);
    if (document !== undefined) documents.push(document);
  }
  return mergeConfigs(documents);
}

/** Reads the JSON list of metadata files (os_config_files.json); a missing file is an empty list. */
export function loadFileList(path: string): string[] {
  const document = readMetadataFile(path);
  if (document === undefined) return [];
  if (!Array.isArray(document)) throw new ApplyConfigError(`No list defined in json file: ${path}`);
  return document.map((item) => {
    if (typeof item !== 'string') throw new ApplyConfigError(`${path}: ${pyRepr(item)} is not a file name`);
    return item;
  });
}

/** Narrows the metadata to the dict at a dotted path (`--subhash`); each step must be a dict. */
export function subhash(config: PyDict, keys: string | undefined): PyDict {
  if (!keys) return config;
  let current = config;
  for (const key of keys.split('.')) {
    const next = current.get(key);
    if (next === undefined || !isDict(next)) {
      throw new ApplyConfigError(`key '${keys}' does not correspond to a hash in the metadata file`);
    }
    current = next;
  }
  return current;
}
