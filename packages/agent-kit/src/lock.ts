import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { link, mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
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

/** The pid in a lock file's first line (`1234`), or in os-refresh-config's `Locked by pid==1234 at ...`. */
function holderPid(content: string): number | undefined {
  const match = /^\s*(\d+)\s*$/m.exec(content.split('\n')[0] ?? '') ?? /pid==(\d+)/.exec(content);
  const pid = match ? Number(match[1]) : NaN;
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/** Whether a process with this pid exists (EPERM: it exists, owned by someone else). */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates the lock file with O_EXCL; false when it already exists. */
async function tryCreate(path: string, content: string): Promise<boolean> {
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

/**
 * Moves a stale lock aside and deletes it. It is moved (atomic) rather than unlinked so that a lock some
 * other process took over in the meantime is noticed and put back instead of being deleted. One narrow race
 * remains: a third taker creating the lock between our rename and our link-back.
 */
async function removeStale(path: string, staleContent: string): Promise<void> {
  const aside = `${path}.stale.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    await rename(path, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  const moved = await readFile(aside, 'utf8').catch(() => staleContent);
  if (moved !== staleContent) await link(aside, path).catch(() => undefined);
  await unlink(aside).catch(() => undefined);
}

/**
 * Takes the lock file at `path` (created with O_EXCL, holding this process's pid). A lock whose pid is
 * dead is stale and taken over. Busy: throws LockBusyError at once, or with `wait` polls until free
 * (or `timeoutMs`). Creates the parent directory if missing.
 */
export async function acquireLock(path: string, options: LockOptions = {}): Promise<Lock> {
  const started = Date.now();
  const pollIntervalMs = options.pollIntervalMs ?? 100;
  const content = `${process.pid}\n${randomBytes(8).toString('hex')}\n`;
  await mkdir(dirname(path), { recursive: true, mode: 0o755 });
  for (;;) {
    if (await tryCreate(path, content)) return heldLock(path, content);
    const holder = await readHolder(path);
    if (holder === undefined) continue;
    const pid = holderPid(holder.content);
    const stale = pid === undefined ? holder.ageMs > UNNAMED_LOCK_GRACE_MS : !isAlive(pid);
    if (stale) {
      await removeStale(path, holder.content);
      continue;
    }
    const waitedMs = Date.now() - started;
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
