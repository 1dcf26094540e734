import { randomBytes } from 'node:crypto';
import { closeSync, fchmodSync, fchownSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isProcessAlive } from './process-tree.ts';

/** Options of writeFileAtomic / writeFileAtomicSync. */
export interface AtomicWriteOptions {
  /** Permission bits of the written file, applied exactly (not masked by the umask). Default 0o600. */
  mode?: number;
  /** Owner and group of the written file (set before the mode: a chown clears the setuid and setgid bits). Default: the writer's. */
  owner?: { uid: number; gid: number };
}

/** Mode of a file when the caller gives none: readable by its owner only, like Python's NamedTemporaryFile. */
const DEFAULT_FILE_MODE = 0o600;
/** Mode of a parent directory the write has to create. */
const CREATED_DIR_MODE = 0o700;

/** A temp name beside the target, hidden and unique per process and call. */
function tempPathFor(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

/** A temp name made by tempPathFor: `.<target name>.<writer pid>.<12 hex>.tmp`. */
const TEMP_NAME = /^\..+\.(\d+)\.[0-9a-f]{12}\.tmp$/;

/**
 * Removes the temp files in `dir` whose writer died before renaming them (killed or crashed
 * mid-write): nothing else ever would, and they hold what the target holds (credentials, signed
 * URLs). A live writer's file is left alone. Returns the names removed; a missing dir is none.
 */
export function removeStaleTempFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const writer = TEMP_NAME.exec(name)?.[1];
    if (writer === undefined || Number(writer) === process.pid || isProcessAlive(Number(writer))) continue;
    try {
      unlinkSync(join(dir, name));
      removed.push(name);
    } catch {
      // Gone already, or not ours to remove: the next call tries again.
    }
  }
  return removed;
}

/** Codes meaning "this filesystem cannot fsync a directory": nothing to do about it. */
function isDirSyncUnsupported(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'EINVAL' || code === 'EISDIR' || code === 'EPERM' || code === 'ENOTSUP';
}

/**
 * The directories whose entries a `mkdir -p` of `dir` added, when it created `firstCreated` (what
 * mkdir's recursive form returns): the parent of each new directory, outermost first. Until these are
 * fsynced, a power loss can take the new directories, and the file written into them, away.
 */
export function parentsOfCreated(firstCreated: string | undefined, dir: string): string[] {
  if (firstCreated === undefined) return [];
  const parents: string[] = [];
  for (let created = dir; ; created = dirname(created)) {
    parents.unshift(dirname(created));
    if (created === firstCreated || dirname(created) === created) break;
  }
  return parents;
}

/** fsyncs a directory, where the filesystem can. */
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync().catch((error: unknown) => {
      if (!isDirSyncUnsupported(error)) throw error;
    });
  } finally {
    await handle.close();
  }
}

/** The synchronous twin of syncDir. */
function syncDirSync(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } catch (error) {
    if (!isDirSyncUnsupported(error)) throw error;
  } finally {
    closeSync(fd);
  }
}

/**
 * `error` with the target named first in its message, its code kept: a write or fsync that fails (ENOSPC on a
 * full disk) names no file, and an open names only the temp file, so the log could not say which file was lost.
 */
function namingTarget(error: unknown, path: string): unknown {
  if (error instanceof Error) error.message = `cannot write ${path}: ${error.message}`;
  return error;
}

/**
 * Replaces `path` with `data` so that a reader sees either the old or the new content, never a part:
 * writes a temp file in the same directory, fsyncs it, renames it over `path`, then fsyncs the directory.
 * Creates the parent directory (0o700) when missing, and then fsyncs the parent of each directory it made.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): Promise<void> {
  try {
    await replaceFile(path, data, options);
  } catch (error) {
    throw namingTarget(error, path);
  }
}

/** The steps of writeFileAtomic. */
async function replaceFile(path: string, data: string | Uint8Array, options: AtomicWriteOptions): Promise<void> {
  const mode = options.mode ?? DEFAULT_FILE_MODE;
  const dir = dirname(path);
  const created = await mkdir(dir, { recursive: true, mode: CREATED_DIR_MODE });
  const tempPath = tempPathFor(path);
  const file = await open(tempPath, 'wx', mode);
  try {
    try {
      if (options.owner) await file.chown(options.owner.uid, options.owner.gid);
      await file.chmod(mode);
      await file.writeFile(data);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tempPath, path);
  } catch (error) {
    await unlink(tempPath).catch(() => undefined);
    throw error;
  }
  await syncDir(dir);
  for (const parent of parentsOfCreated(created, dir)) await syncDir(parent);
}

/** The synchronous twin of writeFileAtomic, for exit paths and code that cannot await. */
export function writeFileAtomicSync(path: string, data: string | Uint8Array, options: AtomicWriteOptions = {}): void {
  try {
    replaceFileSync(path, data, options);
  } catch (error) {
    throw namingTarget(error, path);
  }
}

/** The steps of writeFileAtomicSync. */
function replaceFileSync(path: string, data: string | Uint8Array, options: AtomicWriteOptions): void {
  const mode = options.mode ?? DEFAULT_FILE_MODE;
  const dir = dirname(path);
  const created = mkdirSync(dir, { recursive: true, mode: CREATED_DIR_MODE });
  const tempPath = tempPathFor(path);
  const fd = openSync(tempPath, 'wx', mode);
  try {
    try {
      if (options.owner) fchownSync(fd, options.owner.uid, options.owner.gid);
      fchmodSync(fd, mode);
      const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
      let offset = 0;
      while (offset < bytes.byteLength) offset += writeSync(fd, bytes, offset, bytes.byteLength - offset);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tempPath, path);
  } catch (error) {
    try {
      unlinkSync(tempPath);
    } catch {
      // The temp file may already be gone (rename happened or open failed); the original error is what matters.
    }
    throw error;
  }
  syncDirSync(dir);
  for (const parent of parentsOfCreated(created, dir)) syncDirSync(parent);
}
