// Handing results and progress to heat-config-notify (HEAT_CONFIG_NOTIFY): the result as
// `<notify> <deployment.json> < signal.json`, progress as `<notify> --heartbeat <deployment.json> -- <message>`.
import { runProcess, type Logger, type ProcessResult } from '@hearth/agent-kit';

/** How long heat-config-notify may take to put a result in its outbox (the original delivers inline: ~90 s of retries). */
export const NOTIFY_TIMEOUT_MS = 10 * 60_000;
/** How long one heartbeat may take. */
export const HEARTBEAT_TIMEOUT_MS = 30_000;
/** Longest heartbeat message sent (the server's limit). */
export const HEARTBEAT_MESSAGE_MAX = 4096;

/**
 * heat-config-notify's exit code for a signal that is settled without being delivered: the server refused it
 * (a 4xx) or the deployment cannot be signalled (ZAQAR_SIGNAL, missing inputs). Handing it over again cannot
 * help. (The original heat-config-notify also exits 1 when it gives up on an unreachable server; 55-heat-config
 * never handed a result over twice either.)
 */
export const NOTIFY_EXIT_REFUSED = 1;

/**
 * heat-config-notify's exit code for a command line, environment (`HEARTH_NOTIFY_*`) or deployment file it cannot
 * use (EX_CONFIG): nothing was queued. A problem of this machine, not the server's answer: the result is kept and
 * handed over again on the next run, once it is fixed.
 */
export const NOTIFY_EXIT_CONFIG = 78;

/** What became of a result handed to heat-config-notify. */
export type Handover =
  /** Exit 0: delivered, queued in its outbox, or nothing to send. */
  | 'taken'
  /** Exit NOTIFY_EXIT_REFUSED: settled for good without delivery; not handed over again. */
  | 'refused'
  /**
   * Anything else (misconfigured: NOTIFY_EXIT_CONFIG; its outbox could not be written; an internal error; killed,
   * timed out, not found): handed over again on the next run.
   */
  | 'failed';

/** Reads heat-config-notify's ending as a Handover. */
export function handoverOf(result: Pick<ProcessResult, 'failed' | 'exitCode' | 'timedOut'>): Handover {
  if (!result.failed) return 'taken';
  return result.exitCode === NOTIFY_EXIT_REFUSED && !result.timedOut ? 'refused' : 'failed';
}

/**
 * Runs `notify deploymentFile < signalFile` (the result saved before, see DeploymentMarkers.saveResult);
 * handoverOf(result) says what became of it. The file itself is its stdin, not a pipe fed from here: a
 * heat-config that dies while notify reads would cut a pipe short, and heat-config-notify signals `{}` for input
 * that is not JSON, as the original does: the deployment would have gone COMPLETE without its outputs.
 */
export function runNotify(notify: string, deploymentFile: string, signalFile: string): Promise<ProcessResult> {
  return runProcess(notify, [deploymentFile], { inputFile: signalFile, timeoutMs: NOTIFY_TIMEOUT_MS, killGraceMs: 2000 });
}

/**
 * A progress line as a heartbeat message: NUL bytes removed (no argument can hold one), at most
 * HEARTBEAT_MESSAGE_MAX characters.
 */
export function heartbeatMessage(line: string): string {
  const text = line.replaceAll('\0', '').trim();
  return text.length > HEARTBEAT_MESSAGE_MAX ? text.slice(0, HEARTBEAT_MESSAGE_MAX) : text;
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

/** A HeartbeatPump that runs `notify --heartbeat deploymentFile -- <line>` for each line. */
export function heartbeatPump(notify: string, deploymentFile: string, log: Logger): HeartbeatPump {
  const stats = { sent: 0, replaced: 0 };
  let waiting: string | undefined;
  let inFlight: Promise<void> | undefined;
  let closed = false;
  // A heartbeat is best effort: nothing about one (a NUL byte in the line, a notify that cannot be run) may
  // fail the deployment, let alone throw out of heat-config while the hook still runs.
  const send = async (line: string): Promise<void> => {
    const message = heartbeatMessage(line);
    if (message === '') return;
    try {
      // `--` ends the options: a line such as "--- step 2 ---" or "-h" is the message, not a flag.
      const result = await runProcess(notify, ['--heartbeat', deploymentFile, '--', message], {
        timeoutMs: HEARTBEAT_TIMEOUT_MS,
        killGraceMs: 1000,
      });
      stats.sent += 1;
      if (result.failed) log.warn('heartbeat not sent', { exitCode: result.exitCode, stderr: result.stderr.slice(-2000) });
    } catch (error) {
      log.warn('heartbeat not sent', { error: (error as Error).name, code: (error as NodeJS.ErrnoException).code });
    }
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
