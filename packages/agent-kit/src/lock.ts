import { randomBytes } from 'node:crypto';
import { constants, readFileSync } from 'node:fs';
import { link, mkdir, open, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { isProcessAlive } from './process-tree.ts';
import { setTimeout as sleep } from 'node:timers/promises';

/** Options of acquireLock / withLock. */
export interface LockOptions {
  /** Wait for a busy lock instead of failing at once. Default false (fail fast, as os-refresh-config does). */
  wait?: boolean;
  /** With `wait`, give up after this many ms with LockBusyError. Default: wait forever. */
  timeoutMs?: number;
  /** With `wait`, how often to look again, in ms. Default 100. */
  pollIntervalMs?: number;
}

/** A held lock. */
export interface Lock {
  /** The lock file. */
  readonly path: string;
  /** Removes the lock file if it is still ours; calling it again does nothing. */
  release(): Promise<void>;
}

/** The lock is held by a live process (or, with `wait`, still was when the timeout ran out). */
export class LockBusyError extends Error {
  override readonly name = 'LockBusyError';
  /** Catalogue code. */
  readonly code = 'ERR_LOCK_BUSY';
  /** The lock file. */
  readonly path: string;
  /** The holder's pid, when the lock file names one. */
  readonly pid: number | undefined;

  constructor(path: string, pid: number | undefined, waitedMs?: number) {
    const holder = pid === undefined ? 'another process' : `pid ${pid}`;
    const waited = waitedMs === undefined ? '' : ` after waiting ${waitedMs} ms`;
    super(`lock ${path} is held by ${holder}${waited}; wait for it to finish, or remove the file if that process is gone`);
    this.path = path;
    this.pid = pid;
  }
}

/**
 * A lock file that names no pid is taken over once it is this old: long enough for a taker to write
 * its pid after creating the file, short enough that the empty lock file Debian's os-refresh-config
 * (flock) leaves behind after every run does not make ours report "busy".
 */
const UNNAMED_LOCK_GRACE_MS = 250;

/** Where Linux tells this boot's id (a fresh UUID at every boot). */
const BOOT_ID_FILE = '/proc/sys/kernel/random/boot_id';

let bootId: string | undefined | null = null;

/** This boot's id, read once; undefined where the kernel does not tell it. */
function currentBootId(): string | undefined {
  if (bootId === null) {
    try {
      bootId = /^[0-9a-f-]{36}$/.exec(readFileSync(BOOT_ID_FILE, 'utf8').trim())?.[0];
    } catch {
      bootId = undefined;
    }
  }
  return bootId;
}

/**
 * Whether the lock file was written during an earlier boot (its `boot ...` line names another boot
 * id). Its pid then means nothing: pids start over at a reboot, and a daemon started early often gets
 * the same one again, so "is that pid alive" would keep a dead holder's lock busy for ever. The boot
 * id, not the file's time, decides: a clock stepped at boot would make a fresh lock look old.
 */
function writtenBeforeThisBoot(content: string): boolean {
  const written = /^boot ([0-9a-f-]{36})$/m.exec(content)?.[1];
  const current = currentBootId();
  return written !== undefined && current !== undefined && written !== current;
}

/** The pid in a lock file's first line (`1234`), or in os-refresh-config's `Locked by pid==1234 at ...`. */
function holderPid(content: string): number | undefined {
  const match = /^\s*(\d+)\s*$/m.exec(content.split('\n')[0] ?? '') ?? /pid==(\d+)/.exec(content);
  const pid = match ? Number(match[1]) : NaN;
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * Creates the lock file holding `content`, atomically: the content is written to a file of our own
 * and hard-linked to `path`, which fails when `path` exists. So nobody ever reads a lock file that
 * exists but is still empty. Where hard links are not supported, an O_EXCL create and a write.
 * False when the file already exists.
 */
async function tryCreate(path: string, content: string): Promise<boolean> {
  const own = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.new`;
  try {
    await writeFile(own, content, { mode: 0o644, flag: 'wx' });
  } catch (error) {
    // A full disk fails the write after the create: leave no empty file of ours behind.
    await unlink(own).catch(() => undefined);
    throw error;
  }
  try {
    await link(own, path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') return tryCreateExclusive(path, content);
    throw error;
  } finally {
    await unlink(own).catch(() => undefined);
  }
}

/** Creates the lock file with O_EXCL, then writes it; false when it already exists. */
async function tryCreateExclusive(path: string, content: string): Promise<boolean> {
  let file;
  try {
    file = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await file.writeFile(content);
  } finally {
    await file.close();
  }
  return true;
}

/** What is in the lock file now: undefined when it vanished. */
async function readHolder(path: string): Promise<{ content: string; ageMs: number } | undefined> {
  try {
    const [content, info] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    return { content, ageMs: Date.now() - info.mtimeMs };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** A takeover guard older than this was left by a taker that died while holding it. */
const TAKEOVER_GUARD_STALE_MS = 2_000;

/**
 * Deletes a stale lock, if it still holds `staleContent`. Takers of one stale lock take turns
 * through a guard file (`<path>.takeover`, created like the lock): the lock file can change only by
 * being deleted, which its live owner does only to its own content and a taker only under the guard,
 * so the content read under the guard is the content deleted, never a lock another taker has just
 * created. False when another taker holds the guard: look again shortly.
 */
async function removeStale(path: string, staleContent: string, content: string): Promise<boolean> {
  const guard = `${path}.takeover`;
  if (!(await tryCreate(guard, content))) {
    const holder = await readHolder(guard);
    if (holder !== undefined && holder.ageMs > TAKEOVER_GUARD_STALE_MS) await unlink(guard).catch(() => undefined);
    return false;
  }
  try {
    if ((await readHolder(path))?.content === staleContent) await unlink(path).catch(() => undefined);
    return true;
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

/**
 * Takes the lock file at `path` (created with O_EXCL, holding this process's pid and the boot id). A
 * lock whose pid is dead, or that was written before this boot, is stale and taken over. Busy: throws LockBusyError at once, or with `wait` polls until free
 * (or `timeoutMs`). Creates the parent directory if missing.
 */
export async function acquireLock(path: string, options: LockOptions = {}): Promise<Lock> {
  // monotonic: a step of the wall clock (NTP) must not make the wait endless or end it at once
  const started = performance.now();
  const pollIntervalMs = options.pollIntervalMs ?? 100;
  const boot = currentBootId();
  const content = `${process.pid}\n${randomBytes(8).toString('hex')}\n${boot === undefined ? '' : `boot ${boot}\n`}`;
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  for (;;) {
    if (await tryCreate(path, content)) return heldLock(path, content);
    const holder = await readHolder(path);
    if (holder === undefined) continue;
    const pid = holderPid(holder.content);
    const stale =
      writtenBeforeThisBoot(holder.content) || (pid === undefined ? holder.ageMs > UNNAMED_LOCK_GRACE_MS : !isProcessAlive(pid));
    if (stale) {
      if (!(await removeStale(path, holder.content, content))) await sleep(5);
      continue;
    }
    const waitedMs = Math.round(performance.now() - started);
    if (!options.wait) throw new LockBusyError(path, pid);
    if (options.timeoutMs !== undefined && waitedMs >= options.timeoutMs) throw new LockBusyError(path, pid, waitedMs);
    const remaining = options.timeoutMs === undefined ? pollIntervalMs : Math.min(pollIntervalMs, options.timeoutMs - waitedMs);
    await sleep(Math.max(1, remaining));
  }
}

function heldLock(path: string, content: string): Lock {
  let released = false;
  return {
    path,
    async release() {
      if (released) return;
      released = true;
      const current = await readFile(path, 'utf8').catch(() => undefined);
      if (current === content) await unlink(path).catch(() => undefined);
    },
  };
}

/** Runs `fn` while holding the lock at `path`, releasing it however `fn` ends. */
export async function withLock<T>(path: string, fn: () => Promise<T> | T, options: LockOptions = {}): Promise<T> {
  const lock = await acquireLock(path, options);
  try {
    return await fn();
  } finally {
    await lock.release();
  }
}
