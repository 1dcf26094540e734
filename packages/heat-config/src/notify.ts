// Handing results and progress to heat-config-notify (HEAT_CONFIG_NOTIFY): the result as
// `<notify> <deployment.json> < signal.json`, progress as `<notify> --heartbeat <deployment.json> <message>`.
import { runProcess, type Logger, type ProcessResult } from '@hearth/agent-kit';
import type { SignalData } from './signal-data.ts';

/** How long heat-config-notify may take to put a result in its outbox (the original delivers inline: ~90 s of retries). */
export const NOTIFY_TIMEOUT_MS = 10 * 60_000;
/** How long one heartbeat may take. */
export const HEARTBEAT_TIMEOUT_MS = 30_000;
/** Longest heartbeat message sent (the server's limit). */
export const HEARTBEAT_MESSAGE_MAX = 4096;

/** Runs `notify deploymentFile` with the signal JSON on stdin; the result says whether it took it (exit 0). */
export function runNotify(notify: string, deploymentFile: string, signal: SignalData): Promise<ProcessResult> {
  return runProcess(notify, [deploymentFile], { input: JSON.stringify(signal), timeoutMs: NOTIFY_TIMEOUT_MS, killGraceMs: 2000 });
}

/** Sends heartbeats one at a time; a line arriving while one is in flight replaces any line still waiting. */
export interface HeartbeatPump {
  /** Queues a progress line. */
  push(line: string): void;
  /** Drops what is still waiting and resolves once the heartbeat in flight (if any) has ended. */
  close(): Promise<void>;
  /** Heartbeats sent, and lines dropped because a newer one replaced them. */
  readonly stats: { sent: number; replaced: number };
}

/** A HeartbeatPump that runs `notify --heartbeat deploymentFile <line>` for each line. */
export function heartbeatPump(notify: string, deploymentFile: string, log: Logger): HeartbeatPump {
  const stats = { sent: 0, replaced: 0 };
  let waiting: string | undefined;
  let inFlight: Promise<void> | undefined;
  let closed = false;
  const send = async (line: string): Promise<void> => {
    const message = line.length > HEARTBEAT_MESSAGE_MAX ? line.slice(0, HEARTBEAT_MESSAGE_MAX) : line;
    const result = await runProcess(notify, ['--heartbeat', deploymentFile, message], {
      timeoutMs: HEARTBEAT_TIMEOUT_MS,
      killGraceMs: 1000,
    });
    stats.sent += 1;
    if (result.failed) log.warn('heartbeat not sent', { exitCode: result.exitCode, stderr: result.stderr.slice(-2000) });
  };
  const drain = async (): Promise<void> => {
    while (waiting !== undefined && !closed) {
      const line = waiting;
      waiting = undefined;
      await send(line);
    }
    inFlight = undefined;
  };
  return {
    stats,
    push(line) {
      if (closed) return;
      if (waiting !== undefined) stats.replaced += 1;
      waiting = line;
      inFlight ??= drain();
    },
    async close() {
      closed = true;
      waiting = undefined;
      await inFlight;
    },
  };
}
