// The children a run has started, so that `--timeout` can SIGKILL them and everything they
// started, as os-refresh-config does with psutil. Descendants are found through /proc (agent-kit).
import { processTree, signalAll } from '@hearth/agent-kit/process-tree';

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
    return signalAll([...new Set([...this.#pids].flatMap((pid) => processTree(pid)))], 'SIGKILL');
  }
}
