// Finding and stopping a process and everything it started, through /proc (Linux): the one implementation
// behind heat-config's hook timeout, os-refresh-config's --timeout, cfn-hup's action timeout and runProcess.
// A pid names a process only until it is reaped: the kernel hands it out again (pid_max is often 32768), so a
// pid remembered across a wait is signalled only while /proc still shows the same start time for it.
import { readFileSync, readdirSync } from 'node:fs';

/** The fields of one /proc/<pid>/stat line that we need. */
interface ProcStat {
  pid: number;
  ppid: number;
  /** Process group id. */
  pgrp: number;
  /** `Z` for a zombie: dead, waiting for its parent to reap it (signals do nothing to it). */
  state: string;
  /** Clock ticks after boot it started at: tells a process from a later one given the same pid. */
  startTime: string;
}

/** /proc/<pid>/stat parsed; undefined when the process is gone (or /proc is missing). */
function readStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // Gone (possibly while we looked).
  }
  // "pid (comm) state ppid pgrp ... starttime(22nd field)": comm may hold spaces and parentheses, so read after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const [state = '', ppid, pgrp] = fields;
  const startTime = fields[19];
  if (startTime === undefined || !Number.isSafeInteger(Number(ppid))) return undefined;
  return { pid, ppid: Number(ppid), pgrp: Number(pgrp), state, startTime };
}

/** Every process in /proc; empty where /proc is missing. */
function processes(): ProcStat[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  return entries.flatMap((entry) => (/^\d+$/.test(entry) ? (readStat(Number(entry)) ?? []) : []));
}

/** Whether the process is the one we saw: same pid, same start time, not yet a zombie. */
function isSame(seen: ProcStat): boolean {
  const now = readStat(seen.pid);
  return now !== undefined && now.startTime === seen.startTime && now.state !== 'Z';
}

/**
 * Whether a live process has this pid (EPERM: it does, owned by another user). A zombie is dead (it only waits
 * to be reaped), and 0 or a negative number is not a pid (kill(2) would take it for a process group).
 */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return readStat(pid)?.state !== 'Z';
}

/** The processes below each of `roots` in `all` (children, grandchildren...), parents first, roots excluded. */
function below(roots: readonly number[], all: readonly ProcStat[]): ProcStat[] {
  const children = new Map<number, ProcStat[]>();
  for (const proc of all) {
    const siblings = children.get(proc.ppid) ?? [];
    siblings.push(proc);
    children.set(proc.ppid, siblings);
  }
  const seen = new Set(roots);
  const found: ProcStat[] = [];
  const queue = [...roots];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const child of children.get(next) ?? []) {
      if (seen.has(child.pid)) continue;
      seen.add(child.pid);
      found.push(child);
      queue.push(child.pid);
    }
  }
  return found;
}

/** `pid` and every process below it (children, grandchildren...), parents first. */
export function processTree(pid: number): number[] {
  return [pid, ...below([pid], processes()).map((proc) => proc.pid)];
}

/** Sends `signal` to each pid, ignoring the ones that are already gone; returns the pids it reached. */
export function signalAll(pids: readonly number[], signal: NodeJS.Signals): number[] {
  const reached: number[] = [];
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
      reached.push(pid);
    } catch {
      // Already exited (ESRCH): nothing left to stop.
    }
  }
  return reached;
}

/** Options of stopProcessTree. */
export interface StopProcessTreeOptions {
  /** Wait between SIGTERM and SIGKILL, in ms. */
  graceMs: number;
  /**
   * The root was spawned as the leader of its own process group (`detached: true`): signal the whole group too,
   * which reaches a daemon that was re-parented to init but kept the group. Default false.
   */
  group?: boolean;
  /** How often to look whether everything has ended, in ms. Default 50. */
  pollMs?: number;
}

/** A stop in progress: what is known of the root and of every process signalled so far. */
class TreeStop {
  readonly #pid: number;
  readonly #root: ProcStat | undefined;
  readonly #group: boolean;
  readonly #known = new Map<number, ProcStat>();

  constructor(pid: number, group: boolean) {
    this.#pid = pid;
    this.#root = readStat(pid);
    this.#group = group;
  }

  /** The root's group id while it is safe to signal: its pid was not handed to another process since. */
  #groupId(): number | undefined {
    if (!this.#group || !Number.isSafeInteger(this.#pid) || this.#pid <= 0) return undefined;
    // A pid stays reserved while a group uses it as its id, so another process holding it means our group is
    // empty. A leader already gone is fine: the daemons it left in the group are still ours.
    const now = readStat(this.#pid);
    return now === undefined || now.startTime === this.#root?.startTime ? this.#pid : undefined;
  }

  /**
   * Sends `signal` to the group, to every process seen before that is still the same one, and to the processes
   * now below the root or below any of those (a survivor may have started more).
   */
  signal(signal: NodeJS.Signals): void {
    const all = processes();
    const live = [this.#root, ...this.#known.values()].filter((proc): proc is ProcStat => proc !== undefined && isSame(proc));
    for (const proc of [
      ...live,
      ...below(
        live.map((proc) => proc.pid),
        all,
      ),
    ])
      this.#known.set(proc.pid, proc);
    const groupId = this.#groupId();
    if (groupId !== undefined) signalAll([-groupId], signal);
    signalAll(
      [...this.#known.values()].filter((proc) => isSame(proc)).map((proc) => proc.pid),
      signal,
    );
  }

  /** Whether anything signalled, or any member of the group, still runs (zombies are dead). */
  anyAlive(): boolean {
    const groupId = this.#groupId();
    return processes().some(
      (proc) => proc.state !== 'Z' && (proc.pgrp === groupId || this.#known.get(proc.pid)?.startTime === proc.startTime),
    );
  }
}

/**
 * Stops `pid` and everything it started: SIGTERM to the tree (and the group, with `group`), then SIGKILL to
 * whatever is still there `graceMs` later, including what the survivors started meanwhile. Resolves once nothing
 * is left or the SIGKILL is sent. It goes on after the root exits: a process below it that ignores SIGTERM would
 * otherwise live on. A process that exited is never signalled again, even if its pid was handed out anew.
 */
export async function stopProcessTree(pid: number, options: StopProcessTreeOptions): Promise<void> {
  const stop = new TreeStop(pid, options.group ?? false);
  stop.signal('SIGTERM');
  // monotonic: a backward step of the wall clock (NTP) must not hold off the SIGKILL for its size
  const deadline = performance.now() + options.graceMs;
  while (performance.now() < deadline) {
    if (!stop.anyAlive()) return;
    await new Promise((resolve) => setTimeout(resolve, Math.min(options.pollMs ?? 50, Math.max(1, deadline - performance.now()))));
  }
  stop.signal('SIGKILL');
}

/** Sends `signal` once to `pid`, everything below it and, with `group`, its process group (see stopProcessTree). */
export function signalProcessTree(pid: number, signal: NodeJS.Signals, options: { group?: boolean } = {}): void {
  new TreeStop(pid, options.group ?? false).signal(signal);
}
