// Stopping a hook and everything it started: its process group (the hook is spawned as a group
// leader, so daemonised grandchildren re-parented to init are still in it) plus every descendant
// found under /proc (those that moved to a session of their own).
import { readFileSync, readdirSync } from 'node:fs';

/** One /proc/<pid>/stat line, the fields we need. */
interface ProcStat {
  pid: number;
  ppid: number;
  pgrp: number;
  /** `Z` for a zombie: dead, waiting for its parent to reap it. */
  state: string;
}

/** Every process in /proc; empty where /proc is missing. */
function processes(): ProcStat[] {
  const found: ProcStat[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc');
  } catch {
    return found;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so read after the last ')'.
      const [state = '', ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      found.push({ pid: Number(entry), ppid: Number(ppid), pgrp: Number(pgrp), state });
    } catch {
      // It ended while we looked.
    }
  }
  return found;
}

/** `pid` and all its descendants, parents first. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const { pid: child, ppid: parent } of processes()) children.set(parent, [...(children.get(parent) ?? []), child]);
  const tree = [pid];
  for (let index = 0; index < tree.length; index += 1) tree.push(...(children.get(tree[index]!) ?? []));
  return tree;
}

function send(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone (ESRCH), or a group with no member left.
  }
}

/**
 * Sends `signal` to the process group led by `leader` and to every process in `known` plus the
 * leader's current descendants; returns all the pids signalled so a later SIGKILL reaches them too.
 */
export function signalTree(leader: number, signal: NodeJS.Signals, known: readonly number[] = []): number[] {
  const pids = [...new Set([...known, ...descendants(leader)])];
  send(-leader, signal);
  for (const pid of pids) send(pid, signal);
  return pids;
}

/** Whether any process of the group led by `leader`, or any of `pids`, is still running (zombies are dead). */
function anyAlive(leader: number, pids: readonly number[]): boolean {
  const watched = new Set(pids);
  return processes().some((proc) => proc.state !== 'Z' && (proc.pgrp === leader || watched.has(proc.pid)));
}

/**
 * Stops the hook led by `leader` and everything it started: SIGTERM to all, then SIGKILL to whatever
 * is still there `graceMs` later. Resolves once nothing is left or the SIGKILL is sent.
 */
export async function stopTree(leader: number, graceMs: number): Promise<void> {
  const signalled = signalTree(leader, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!anyAlive(leader, signalled)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  signalTree(leader, 'SIGKILL', signalled);
}
