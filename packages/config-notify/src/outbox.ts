// The durable outbox: one JSON file per signal in a 0700 directory, each written atomically
// (temp file, fsync, rename, fsync the dir) with mode 0600, because an entry holds what it
// takes to deliver it, credentials included. An entry carries its own retry state (attempts,
// next attempt time), so whoever delivers it next, after a restart or a reboot, resumes there.
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  acquireLock,
  clearServerAnswered,
  LockBusyError,
  markServerAnswered,
  originOf,
  removeStaleTempFiles,
  serverAnsweredAt,
  writeFileAtomic,
  type Lock,
} from '@hearth/agent-kit';
import type { SignalRoute } from './route.ts';

/** One queued signal, as stored in `<outboxDir>/<id>.json`. */
export interface OutboxEntry {
  /** Format version of the file. */
  version: 1;
  /** Stable id: a hash of the deployment, the route and the body; also the Idempotency-Key. */
  id: string;
  /** The derived config id of the deployment signalled. */
  deploymentId: string;
  deploymentName: string | null;
  /** Where the signal goes (holds credentials: never log it). */
  route: SignalRoute;
  /** The JSON body, already trimmed to the size limit. */
  body: string;
  /** When it was queued, by this VM's clock (ISO 8601); moved to the present when the clock went back past it. */
  createdAt: string;
  /** The deployment's deadline by the server's clock (ISO 8601): its `creation_time` plus its timeout. */
  deadline: string;
  /** The deployment's timeout in ms: how long after `createdAt` this VM keeps retrying by its own clock. Absent in older entries. */
  timeoutMs?: number;
  /** Attempts made so far. */
  attempts: number;
  /** Not before this (ISO 8601). */
  nextAttemptAt: string;
  /** Why the last attempt failed, if it did. */
  lastError: string | null;
  /** When the last failed attempt was made (ISO 8601). Absent before the first, and in older entries. */
  lastAttemptAt?: string;
  /** The server's own Retry-After on the last attempt, as a time (ISO 8601): never tried before it. */
  retryAfterAt?: string;
}

/** Where a route's signal lands: its URL, or for HEAT_SIGNAL the keystone, stack and resource. */
export function routeTarget(route: SignalRoute): string {
  return route.transport === 'HEAT_SIGNAL' ? `${route.authUrl} ${route.stackId} ${route.resourceName}` : route.url;
}

/**
 * Where a route's signals are answered: its URL's origin (keystone's for HEAT_SIGNAL, which the signal
 * goes through first). A signal delivered to an origin says that origin is up again (markAnswered).
 */
export function routeOrigin(route: SignalRoute): string {
  return originOf(route.transport === 'HEAT_SIGNAL' ? route.authUrl : route.url);
}

/** The stable id of a signal: the same deployment, route and body always give the same id. */
export function entryId(deploymentId: string, route: SignalRoute, body: string): string {
  return createHash('sha256')
    .update(`${deploymentId}\n${route.transport}\n${routeTarget(route)}\n${body}`)
    .digest('hex')
    .slice(0, 40);
}

/** Whether a parsed file looks like an entry this version can deliver. */
function isEntry(value: unknown): value is OutboxEntry {
  if (value === null || typeof value !== 'object') return false;
  const entry = value as Partial<OutboxEntry>;
  return (
    entry.version === 1 &&
    typeof entry.id === 'string' &&
    typeof entry.body === 'string' &&
    typeof entry.route === 'object' &&
    entry.route !== null &&
    typeof entry.attempts === 'number' &&
    typeof entry.nextAttemptAt === 'string' &&
    typeof entry.deadline === 'string'
  );
}

/** Errors of a disk that takes no more writes: full, over quota, or remounted read-only. */
export function isCannotWrite(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT' || code === 'EROFS';
}

/** An entry file that could not be read: left in place for an operator, reported once per listing. */
export interface UnreadableEntry {
  file: string;
  reason: string;
}

/** The outbox directory and the operations on its entries. */
export class Outbox {
  /** `dir` is created (0700) when missing and tightened to 0700 when looser. */
  constructor(readonly dir: string) {}

  /** Creates the directory 0700, or tightens its mode to 0700. */
  ensureDir(): void {
    mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    if ((statSync(this.dir).mode & 0o077) !== 0) chmodSync(this.dir, 0o700);
  }

  /** The file of an entry. */
  pathOf(id: string): string {
    return join(this.dir, `${id}.json`);
  }

  /** Reads one entry; undefined when it is gone (delivered by someone else). */
  read(id: string): OutboxEntry | undefined {
    let text: string;
    try {
      text = readFileSync(this.pathOf(id), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    const parsed: unknown = JSON.parse(text);
    if (!isEntry(parsed)) throw new Error(`${this.pathOf(id)} is not an outbox entry of version 1`);
    return parsed;
  }

  /** Writes an entry durably (atomic, fsynced, 0600). */
  async save(entry: OutboxEntry): Promise<void> {
    this.ensureDir();
    await writeFileAtomic(this.pathOf(entry.id), JSON.stringify(entry), { mode: 0o600 });
  }

  /** Queues an entry unless one with the same id is there already; returns the one now queued. */
  async put(entry: OutboxEntry): Promise<OutboxEntry> {
    const existing = this.readQuietly(entry.id);
    if (existing) return existing;
    await this.save(entry);
    return entry;
  }

  /** Removes an entry (delivered, rejected or expired); a missing file is fine. */
  remove(id: string): void {
    try {
      unlinkSync(this.pathOf(id));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  /** Every readable entry, oldest first, and the files that could not be read; removes temp files of dead writers. */
  list(): { entries: OutboxEntry[]; unreadable: UnreadableEntry[] } {
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { entries: [], unreadable: [] };
      throw error;
    }
    const entries: OutboxEntry[] = [];
    const unreadable: UnreadableEntry[] = [];
    // Temp files of writers killed mid-write hold whole signals, credentials included.
    removeStaleTempFiles(this.dir);
    for (const name of names) {
      if (name.startsWith('.') || !name.endsWith('.json')) continue;
      try {
        const entry = this.read(name.slice(0, -'.json'.length));
        if (entry) entries.push(entry);
      } catch (error) {
        unreadable.push({ file: join(this.dir, name), reason: (error as Error).message });
      }
    }
    entries.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
    return { entries, unreadable };
  }

  /**
   * Locks one entry for delivery; undefined when another process is delivering it right now. Where no
   * lock file can be written (a full or read-only disk) the entry is delivered unlocked: at worst two
   * processes send it at once, which the server acknowledges as one signal (same Idempotency-Key or
   * body), while failing would keep every queued signal from going out.
   */
  async lock(id: string): Promise<Lock | undefined> {
    const path = join(this.dir, `.${id}.lock`);
    try {
      return await acquireLock(path);
    } catch (error) {
      if (error instanceof LockBusyError) return undefined;
      if (!isCannotWrite(error)) throw error;
      return { path, release: () => Promise.resolve() };
    }
  }

  /** Records that `origin` answered a signal other than `except` (agent-kit's markServerAnswered). */
  markAnswered(origin: string, atMs: number, except: string): void {
    markServerAnswered(this.dir, origin, atMs, except);
  }

  /** When `origin` last answered (agent-kit's serverAnsweredAt), in epoch ms; -Infinity when never. */
  answeredAt(origin: string): number {
    return serverAnsweredAt(this.dir, origin);
  }

  /** Removes the marks of answers: with nothing queued they say nothing. */
  clearAnswered(): void {
    clearServerAnswered(this.dir);
  }

  private readQuietly(id: string): OutboxEntry | undefined {
    try {
      return this.read(id);
    } catch {
      return undefined;
    }
  }
}
