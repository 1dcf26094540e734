// The metadata a resource had before a change whose hooks have not all run yet: `<cfnCacheDir>/cfn_hup_pending_<res>`
// (0600, atomic). The new metadata is cached before the hooks fire (fetchMetadata writes it, and so does the
// cfn-init an action runs): without this file a pass cut short (cfn-hup killed, SIGTERM, the machine down) left the
// next one comparing with the new metadata, seeing no change, and the change was never applied.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '@hearth/agent-kit/atomic-file';
import type { AgentPaths } from '@hearth/agent-kit/paths';
import { pyJsonDumps } from '@hearth/agent-kit/python-json';
import { readJsonFile } from '../shared/metadata-cache.ts';

/** The pending file of `resource`. */
export function pendingFile(paths: Pick<AgentPaths, 'cfnCacheDir'>, resource: string): string {
  return join(paths.cfnCacheDir, `cfn_hup_pending_${resource}`);
}

/**
 * The metadata before a change an earlier pass did not finish firing: `{ before }` (before undefined when there
 * was no cached metadata at all), or undefined when no change is pending (or the file cannot be read).
 */
export function readPending(file: string): { before: unknown } | undefined {
  const read = readJsonFile(file);
  if (read.kind !== 'ok' || read.value === null || typeof read.value !== 'object' || Array.isArray(read.value)) return undefined;
  const value = read.value as Record<string, unknown>;
  return { before: Object.hasOwn(value, 'before') ? value.before : undefined };
}

/** Records `before` as the metadata to compare with until clearPending: written before the first hook fires. */
export async function savePending(file: string, before: unknown): Promise<void> {
  await writeFileAtomic(file, pyJsonDumps(before === undefined ? {} : { before }), { mode: 0o600 });
}

/** Every hook of the change has run: the cached metadata is the baseline again. */
export function clearPending(file: string): void {
  rmSync(file, { force: true });
}
