// The metadata cache, laid out exactly as the original's (reference/agents.md §1.4): `<key>.json`
// (latest), `.json.orig` (first ever seen), `.json.last` (what the command last consumed
// successfully) and `os_config_files.json` (the list handed to the command).
import { cpSync, existsSync, lstatSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { removeStaleTempFiles, writeFileAtomic } from '@hearth/agent-kit';
import { jsonEqual } from '@hearth/agent-kit/python-equal';
import { parsePyJson, pyJsonDumps, pyPlainData } from '@hearth/agent-kit/python-json';

/** The name of the list of cache files the command reads, without `.json`. */
export const META_LIST_KEY = 'os_config_files';

/** What `store` found. */
export interface StoreResult {
  /** True when the key is new, has no `.last`, or its `.last` differs from the new content (Python's `!=`: 1 equals 1.0). */
  changed: boolean;
  /** `<cachedir>/<key>.json`. */
  path: string;
  /** `<key>.json.last` when it exists but cannot be read or parsed (damaged by a crash): counted as changed. */
  damagedLast?: string;
}

/** One cache directory. */
export interface MetadataCache {
  readonly dir: string;
  /** `<dir>/<key>.json`. */
  pathOf(key: string): string;
  /** Writes `<key>.json` atomically (0600, Python's `indent=1` text), `.orig` the first time, and says whether it changed. */
  store(key: string, content: unknown): Promise<StoreResult>;
  /** Copies `<key>.json` to `<key>.json.last`: the command consumed it successfully. */
  commit(key: string): Promise<void>;
  /** Writes `os_config_files.json`: the JSON list of `<dir>/<key>.json` for `keys`, in order. */
  storeMetaList(keys: readonly string[]): Promise<string>;
  /** Replaces `backupDir` with a copy of the whole cache directory; throws, deleting nothing, when `backupDir` is a file. */
  backup(backupDir: string): void;
}

function readJson(path: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: pyPlainData(parsePyJson(readFileSync(path, 'utf8'))) };
  } catch {
    return { ok: false };
  }
}

/**
 * The cache in `dir`, created 0700 on first store: it holds the metadata, credentials included. (The original's
 * `os.mkdir` gives 0777 less the umask: world-writable under umask 000, so anyone could swap the files root runs.)
 */
export function openCache(dir: string): MetadataCache {
  const pathOf = (key: string): string => join(dir, `${key}.json`);
  const ensureDir = (): void => {
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  };
  return {
    dir,
    pathOf,
    async store(key, content) {
      ensureDir();
      const path = pathOf(key);
      const text = pyJsonDumps(content, { indent: 1 });
      let changed = false;
      if (!existsSync(`${path}.orig`)) {
        await writeFileAtomic(`${path}.orig`, text, { mode: 0o600 });
        changed = true;
      }
      await writeFileAtomic(path, text, { mode: 0o600 });
      if (!changed) {
        const last = readJson(`${path}.last`);
        changed = !last.ok || !jsonEqual(last.value, content);
        if (!last.ok && existsSync(`${path}.last`)) return { changed, path, damagedLast: `${path}.last` };
      }
      return { changed, path };
    },
    async commit(key) {
      const path = pathOf(key);
      if (existsSync(path)) await writeFileAtomic(`${path}.last`, readFileSync(path), { mode: 0o600 });
    },
    async storeMetaList(keys) {
      ensureDir();
      const path = pathOf(META_LIST_KEY);
      await writeFileAtomic(path, pyJsonDumps(keys.map(pathOf)), { mode: 0o600 });
      return path;
    },
    backup(backupDir) {
      // A write killed mid-way (the agent crashed, the VM lost power) leaves a temp file holding
      // metadata, credentials included: drop it rather than keep it and copy it on every pass.
      removeStaleTempFiles(dir);
      // The original's rmtree refuses a file; removing it would destroy whatever a wrong setting points at.
      const existing = lstatSync(backupDir, { throwIfNoEntry: false });
      if (existing && !existing.isDirectory() && !existing.isSymbolicLink()) {
        throw new Error(`backup_cachedir ${backupDir} is not a directory; not replacing it: point --backup-cachedir at a directory`);
      }
      rmSync(backupDir, { recursive: true, force: true });
      if (existsSync(dir)) cpSync(dir, backupDir, { recursive: true, preserveTimestamps: true });
    },
  };
}
