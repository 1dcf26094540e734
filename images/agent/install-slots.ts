// What stands where `hearth-agent install` writes a command link or a hook launcher: nothing, hearth-agent's own
// (replaced), something else (kept beside it as NAME.pre-hearth, said so), or something it cannot take (refused
// before anything is written).
import { lstatSync, readFileSync, readlinkSync, renameSync } from 'node:fs';
import { basename } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';

/** Suffix of the copy install keeps of a command or hook it replaces that was not hearth-agent's (pip's, a wrapper). */
export const BACKUP_SUFFIX = '.pre-hearth';

/** One name install writes: a command link or a hook launcher. */
export interface Slot {
  /** Where it goes (inside root). */
  path: string;
  /** True when what is there now is hearth-agent's own (a link to an agent, a launcher): replaced without a copy. */
  isOurs: (path: string) => boolean;
}

/** The lstat of `path`, or undefined when nothing is there. */
export function entryAt(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/** A link to this agent or to any hearth-agent (an earlier install with another --agent or --prefix). */
export function isAgentLink(agentPath: string): (path: string) => boolean {
  return (path) => {
    if (!entryAt(path)?.isSymbolicLink()) return false;
    const target = readlinkSync(path);
    return target === agentPath || basename(target).startsWith('hearth-agent');
  };
}

/** A launcher hookLauncher wrote (its second line names hearth-agent). */
export function isLauncher(path: string): boolean {
  return (
    entryAt(path)?.isFile() === true && /^#!\/bin\/sh\n# heat-config hook .*, served by hearth-agent\.\n/.test(readFileSync(path, 'utf8'))
  );
}

/**
 * Fails, before anything is written, on a slot install could not take without losing something: a directory, or a
 * file not hearth-agent's whose backup name is already taken (an earlier install's copy).
 */
export function checkSlots(slots: readonly Slot[]): void {
  for (const { path, isOurs } of slots) {
    const entry = entryAt(path);
    if (entry === undefined || isOurs(path)) continue;
    if (entry.isDirectory()) throw new ExitError(1, `install: ${path} is a directory; remove it first (nothing was installed)`);
    if (entryAt(path + BACKUP_SUFFIX) !== undefined) {
      throw new ExitError(
        1,
        `install: ${path} is not hearth-agent's and ${path}${BACKUP_SUFFIX} already holds an earlier copy; ` +
          'move one of them away and run install again (nothing was installed)',
      );
    }
  }
}

/** Moves what is at `slot.path` aside to `<path>.pre-hearth` unless it is hearth-agent's; says so through `warn`. */
export function keepForeign(slot: Slot, warn: (message: string) => void): void {
  if (entryAt(slot.path) === undefined || slot.isOurs(slot.path)) return;
  const backup = slot.path + BACKUP_SUFFIX;
  renameSync(slot.path, backup);
  warn(`install: ${slot.path} was not hearth-agent's; kept it as ${backup} (to go back: mv ${backup} ${slot.path})`);
}
