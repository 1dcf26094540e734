// Writing one rendered file as the original does: an empty body with allow_empty false deletes
// the file; otherwise a temp file beside the target gets the body, the mode (given, else the
// existing file's, else 0644) and the owner (given, else the existing file's), then is renamed
// over the target. Unlike the original, the data is fsynced before the rename.
import {
  closeSync,
  existsSync,
  fchmodSync,
  fchownSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import type { RenderedFile } from './templates.ts';

/** What happened to one output file. */
export type WriteOutcome = 'written' | 'deleted' | 'skipped-empty';

/** Writes (or deletes) `file` at `path` and says which it did. */
export function writeRenderedFile(path: string, file: RenderedFile): WriteOutcome {
  if (!file.allowEmpty && file.body.length === 0) {
    if (existsSync(path)) {
      unlinkSync(path);
      return 'deleted';
    }
    return 'skipped-empty';
  }
  let mode = 0o644;
  let uid = -1;
  let gid = -1;
  if (existsSync(path)) {
    const stat = statSync(path);
    [mode, uid, gid] = [stat.mode & 0o7777, stat.uid, stat.gid];
  }
  // As the original: a mode of 0 in the control file counts as not given.
  if (file.mode) mode = file.mode;
  if (file.uid !== undefined) uid = file.uid;
  if (file.gid !== undefined) gid = file.gid;
  const dir = dirname(path);
  // 0755 whatever the umask: under umask 000 the original made them 0777, and anyone could then swap a file
  // root reads (/var/run/heat-config/heat-config, the deployments heat-config runs) for their own.
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  const fd = openSync(temp, 'wx', 0o600);
  try {
    try {
      // A write may take only part of the bytes (a nearly full disk): the rest is written until the disk says ENOSPC,
      // never renamed over the target cut short.
      const bytes = Buffer.from(file.body, 'utf8');
      let offset = 0;
      while (offset < bytes.byteLength) offset += writeSync(fd, bytes, offset, bytes.byteLength - offset);
      fchmodSync(fd, mode);
      if (uid !== -1 || gid !== -1) fchownSync(fd, uid, gid);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (error) {
    // Whatever failed (a full disk, a directory in the way of the rename), no temp file is left behind.
    rmSync(temp, { force: true });
    throw error;
  }
  return 'written';
}
