// cfn-hup as a daemon: a pass at start, then one every interval, re-reading the configuration before a
// pass whenever its files changed. Passes never overlap. The interval is kept on the monotonic clock: a
// schedule on the wall clock (node-cron) stopped for the size of a backward step when NTP first synced the
// VM, and after a forward step of years walked every missed tick, never running a pass.
import { setLongTimeout } from '@hearth/agent-kit/long-timer';
import type { Logger } from '@hearth/agent-kit/logger';
import type { HupConfig } from './config.ts';
import type { PassReport } from './pass.ts';

/** What the daemon needs; each function is injected so tests can drive it. */
export interface DaemonOptions {
  /** Reads the configuration (throws on a bad one). */
  loadConfig: () => HupConfig;
  /** The current signature of the configuration files. */
  currentSignature: () => string;
  runPass: (config: HupConfig) => Promise<PassReport>;
  /** Overrides `[main] interval` (minutes) with seconds (`--interval-seconds`, beyond the original). */
  intervalSeconds?: number | undefined;
  log: Logger;
  /** Stops the daemon when aborted. */
  signal: AbortSignal;
}

/** Runs until `signal` aborts; resolves then. */
export async function runDaemon(options: DaemonOptions): Promise<void> {
  const { log } = options;
  let config = options.loadConfig();
  const intervalMs = () => (options.intervalSeconds ?? config.main.intervalMinutes * 60) * 1000;
  let running: Promise<void> = Promise.resolve();
  let cancelTimer = (): void => undefined;

  const pass = async (reason: string): Promise<void> => {
    const signature = options.currentSignature();
    if (signature !== config.signature) {
      try {
        config = options.loadConfig();
        log.info('configuration reloaded', { hooks: config.hooks.map((hook) => hook.name) });
      } catch (error) {
        log.error('configuration not reloaded, keeping the previous one', { error: (error as Error).message });
      }
    }
    log.debug('pass', { reason });
    const report = await options.runPass(config);
    log.debug('pass done', { fired: report.fired.length, failed: report.failed });
  };

  // The next pass is due one interval after this one started, or at once when this one took longer.
  const runFrom = (reason: string): void => {
    if (options.signal.aborted) return;
    const started = performance.now();
    running = pass(reason)
      .catch((error: unknown) => log.error('pass failed', { error: (error as Error).message }))
      .finally(() => {
        if (options.signal.aborted) return;
        cancelTimer = setLongTimeout(() => runFrom('interval'), started + intervalMs() - performance.now());
      });
  };
  runFrom('start');
  log.info('cfn-hup started', { stack: config.main.stack, intervalSeconds: intervalMs() / 1000, hooks: config.hooks.length });

  await new Promise<void>((resolve) => {
    if (options.signal.aborted) resolve();
    else options.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  cancelTimer();
  await running;
  log.info('cfn-hup stopped');
}
