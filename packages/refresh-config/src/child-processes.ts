// The children a run has started, so that `--timeout` can SIGKILL them and everything they
// started, as os-refresh-config does with psutil. Descendants are found through /proc.
import { readFileSync, readdirSync } from 'node:fs';

/** The parent pid in a `/proc/<pid>/stat` line (the field after the command name in parentheses). */
export function parentPidOf(stat: string): number | undefined {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const parent = Number(fields[1]);
  return Number.isInteger(parent) ? parent : undefined;
}

/** Every live process below `pid` (children, grandchildren, ...), read from /proc; none where /proc is absent. */
export function descendantPids(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  for (const entry of entries) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const parent = parentPidOf(stat);
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  const queue = [pid];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const child of children.get(next) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** The live children of one run. */
export class ChildTracker {
  readonly #pids = new Set<number>();

  /** Remembers a started child until `forget`. */
  add(pid: number): void {
    this.#pids.add(pid);
  }

  /** Drops a child that has exited. */
  forget(pid: number): void {
    this.#pids.delete(pid);
  }

  /** SIGKILLs every tracked child, then all of its descendants (found first, so the parent cannot react to its children dying); returns the pids signalled. */
  killAll(): number[] {
    const targets = [...this.#pids].flatMap((pid) => [pid, ...descendantPids(pid)]);
    const killed: number[] = [];
    for (const pid of targets) {
      try {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        // already gone
      }
    }
    return killed;
  }
}
