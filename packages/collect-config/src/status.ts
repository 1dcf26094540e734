// The daemon's own state, kept in one JSON file so that `os-collect-config --status [--json]`
// can say what the running daemon last did: the last poll of each collector and the last command.
import { existsSync, readFileSync } from 'node:fs';
import { isProcessAlive, writeFileAtomic } from '@hearth/agent-kit';
import type { CommandResult } from './run-command.ts';
import type { HearthWatchState } from './collectors/hearth.ts';

/** The last poll of one collector. */
export interface CollectorStatus {
  name: string;
  lastPollAt: string;
  outcome: 'data' | 'unchanged' | 'unavailable' | 'not-configured' | 'error';
  /** Why it was not data, if it was not. */
  reason?: string;
  /** The cache keys it contributed to OS_CONFIG_FILES (its last good ones when this poll failed). */
  keys: string[];
  /** When it last returned fresh data. */
  lastDataAt?: string;
  durationMs: number;
}

/** The whole state file. */
export interface DaemonStatus {
  pid: number;
  startedAt: string;
  mode: 'daemon' | 'one-time';
  cachedir: string;
  collectors: CollectorStatus[];
  /** The last command's outcome, not its text (which may carry a secret: this file is world-readable). */
  lastCommand?: Omit<CommandResult, 'command'> & { ok: boolean; files: string[] };
  /** Seconds until the next timed poll (a hearth change comes sooner). */
  nextPollInSeconds?: number;
  updatedAt: string;
  hearth?: HearthWatchState;
}

/** Writes the state atomically (0644: it holds no secrets, and operators read it). */
export async function writeStatus(path: string, status: DaemonStatus): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(status, null, 2)}\n`, { mode: 0o644 });
}

/** The state file read back, with whether its writer still runs; undefined when there is none. */
export function readStatus(path: string): (DaemonStatus & { running: boolean }) | undefined {
  if (!existsSync(path)) return undefined;
  const status = JSON.parse(readFileSync(path, 'utf8')) as DaemonStatus;
  return { ...status, running: status.mode === 'daemon' && isProcessAlive(status.pid) };
}

/** The state for people: one line per collector and one for the last command. */
export function formatStatus(status: DaemonStatus & { running: boolean }): string {
  const lines = [
    `os-collect-config pid ${status.pid} (${status.running ? 'running' : 'not running'}), ${status.mode}, since ${status.startedAt}`,
  ];
  for (const collector of status.collectors) {
    const detail = collector.reason ? `: ${collector.reason}` : '';
    lines.push(`  ${collector.name.padEnd(10)} ${collector.lastPollAt} ${collector.outcome}${detail} [${collector.keys.join(', ')}]`);
  }
  if (status.hearth) lines.push(`  hearth watch: ${status.hearth.state}, last change ${status.hearth.lastChangeAt ?? 'never'}`);
  const command = status.lastCommand;
  lines.push(
    command ? `  last command: exit ${command.exitCode} at ${command.startedAt} (${command.durationMs} ms)` : '  last command: none yet',
  );
  return `${lines.join('\n')}\n`;
}
