// cfn-hup as a daemon: a pass at start, then one every interval (node-cron, loaded only here), re-reading
// the configuration before a pass whenever its files changed. Passes never overlap.
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

/** The cron expression ticking at the interval (or every second/minute, gated by elapsed time, when it does not divide a minute/hour). */
export function tickExpression(intervalSeconds: number): string {
  if (intervalSeconds < 60) return 60 % intervalSeconds === 0 ? `*/${intervalSeconds} * * * * *` : '* * * * * *';
  const minutes = intervalSeconds / 60;
  if (Number.isInteger(minutes) && minutes < 60 && 60 % minutes === 0) return `0 */${minutes} * * * *`;
  return Number.isInteger(minutes) ? '0 * * * * *' : '* * * * * *';
}

/** Seconds between two ticks of an expression made by tickExpression. */
function tickSeconds(expression: string): number {
  const [seconds = '', minutes = ''] = expression.split(' ');
  if (seconds.startsWith('*/')) return Number(seconds.slice(2));
  if (minutes.startsWith('*/')) return Number(minutes.slice(2)) * 60;
  return seconds === '*' ? 1 : 60;
}

/** Runs until `signal` aborts; resolves then. */
export async function runDaemon(options: DaemonOptions): Promise<void> {
  const { log } = options;
  let config = options.loadConfig();
  const intervalMs = () => (options.intervalSeconds ?? config.main.intervalMinutes * 60) * 1000;
  let lastStarted = 0;
  let running: Promise<void> = Promise.resolve();
  let busy = false;

  const pass = async (reason: string): Promise<void> => {
    const signature = options.currentSignature();
    if (signature !== config.signature) {
      try {
        config = options.loadConfig();
        log.info('configuration reloaded', { hooks: config.hooks.map((hook) => hook.name) });
        reschedule();
      } catch (error) {
        log.error('configuration not reloaded, keeping the previous one', { error: (error as Error).message });
      }
    }
    lastStarted = Date.now();
    log.debug('pass', { reason });
    const report = await options.runPass(config);
    log.debug('pass done', { fired: report.fired.length, failed: report.failed });
  };

  const { default: cron } = await import('node-cron');
  let expression = tickExpression(intervalMs() / 1000);
  const tick = (): void => {
    // an expression that ticks at the interval runs on every tick; a finer one (the interval does not divide
    // a minute or an hour) runs once the interval has passed since the last pass started
    const exact = tickSeconds(expression) === intervalMs() / 1000;
    if (busy || (!exact && Date.now() - lastStarted < intervalMs() - 250)) return;
    busy = true;
    running = pass('interval')
      .catch((error: unknown) => log.error('pass failed', { error: (error as Error).message }))
      .finally(() => (busy = false));
  };
  let task = cron.schedule(expression, tick, { noOverlap: true, name: 'cfn-hup' });
  function reschedule(): void {
    const wanted = tickExpression(intervalMs() / 1000);
    if (wanted === expression) return;
    void task.destroy();
    expression = wanted;
    task = cron.schedule(expression, tick, { noOverlap: true, name: 'cfn-hup' });
  }
  busy = true;
  running = pass('start')
    .catch((error: unknown) => log.error('pass failed', { error: (error as Error).message }))
    .finally(() => (busy = false));
  log.info('cfn-hup started', { stack: config.main.stack, intervalSeconds: intervalMs() / 1000, hooks: config.hooks.length });

  await new Promise<void>((resolve) => {
    if (options.signal.aborted) resolve();
    else options.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  await task.destroy();
  await running;
  log.info('cfn-hup stopped');
}
