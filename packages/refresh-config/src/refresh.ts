// os-refresh-config's run: take the lock (fail fast), run each phase directory through run-parts
// in order, and on the first failure run error.d and stop with exit 1.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { acquireLock, LockBusyError } from '@hearth/agent-kit/lock';
import { setLongTimeout } from '@hearth/agent-kit/long-timer';
import { ChildTracker } from './child-processes.ts';
import type { EventLogger, RunPartsReporter } from './report.ts';
import { runParts, type RunPartsResult } from './run-parts.ts';

/** The phases, in the order they run (migration after post-configure, on purpose). */
export const PHASES = ['pre-configure', 'configure', 'post-configure', 'migration'] as const;

/** One of PHASES. */
export type Phase = (typeof PHASES)[number];

/** os-refresh-config's exit status when the lock is held: EAGAIN, the errno of the failed flock. */
export const EXIT_LOCK_BUSY = 11;

/** What `refreshConfig` needs. */
export interface RefreshConfigOptions {
  /** Holds `<phase>.d` and `error.d`. */
  baseDir: string;
  /** Lock file, taken without waiting. */
  lockFile: string;
  /** Seconds before every child (and its descendants) is SIGKILLed and the run fails. Default none. */
  timeoutSeconds?: number;
  /** Environment of the scripts. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** os-refresh-config's own messages. */
  logger: EventLogger;
  /** run-parts events (per-script timing). */
  reporter: RunPartsReporter;
}

/** How a run ended: the same fields whatever happened. */
export interface RefreshResult {
  /** 0 success, 1 a phase failed (or timed out), 11 the lock was held. */
  exitCode: number;
  /** The phases whose directory existed and ran, in order, with their run-parts results. */
  phases: Array<{ phase: Phase; result: RunPartsResult }>;
  /** The phase that failed, if any. */
  failedPhase: Phase | undefined;
  /** error.d's run-parts result, when a phase failed and error.d exists. */
  errorHandlers: RunPartsResult | undefined;
  /** Whether --timeout fired. */
  timedOut: boolean;
}

/** run-parts over `dir`, with a directory that is not one (dib-run-parts' usage error) as exit 1. */
async function runPhaseDir(dir: string, options: Parameters<typeof runParts>[1], logger: EventLogger): Promise<RunPartsResult> {
  try {
    return await runParts(dir, options);
  } catch (error) {
    logger.error((error as Error).message, { dir });
    return { dir, exitCode: 1, scripts: [] };
  }
}

/** Runs every phase under `baseDir` as os-refresh-config does. */
export async function refreshConfig(options: RefreshConfigOptions): Promise<RefreshResult> {
  const { logger, reporter, baseDir } = options;
  const outcome: RefreshResult = { exitCode: 0, phases: [], failedPhase: undefined, errorHandlers: undefined, timedOut: false };
  let lock;
  try {
    lock = await acquireLock(options.lockFile, { wait: false });
  } catch (error) {
    if (!(error instanceof LockBusyError)) {
      // A full disk, or a directory in its place: the bare errno named neither the file nor what was skipped.
      logger.error(`Could not create the lock file ${options.lockFile}: ${(error as Error).message}; no phase was run`, {
        lockfile: options.lockFile,
        code: (error as NodeJS.ErrnoException).code,
      });
      return { ...outcome, exitCode: 1 };
    }
    logger.error(`Could not lock ${options.lockFile}: held by ${error.pid === undefined ? 'another process' : `pid ${error.pid}`}`, {
      lockfile: options.lockFile,
      holder: error.pid,
    });
    return { ...outcome, exitCode: EXIT_LOCK_BUSY };
  }
  const tracker = new ChildTracker();
  const cancelTimeout =
    options.timeoutSeconds === undefined
      ? undefined
      : setLongTimeout(() => {
          outcome.timedOut = true;
          logger.error(`Timeout reached: ${options.timeoutSeconds}s. Sending SIGKILL to all children`, { timeout: options.timeoutSeconds });
          tracker.killAll();
        }, options.timeoutSeconds * 1000);
  const runOptions = { env: options.env, reporter, tracker };
  try {
    for (const phase of PHASES) {
      const dir = join(baseDir, `${phase}.d`);
      logger.debug(`Checking ${dir}`, { phase, dir });
      if (!existsSync(dir)) {
        logger.debug(`No dir for phase ${phase}`, { phase });
        continue;
      }
      logger.info(`Starting phase ${phase}`, { phase });
      const result = outcome.timedOut
        ? { dir, exitCode: 137, scripts: [] }
        : await runPhaseDir(dir, { ...runOptions, cancelled: () => outcome.timedOut }, logger);
      outcome.phases.push({ phase, result });
      if (result.exitCode === 0) {
        logger.info(`Completed phase ${phase}`, { phase });
        continue;
      }
      outcome.failedPhase = phase;
      logger.error(`during ${phase} phase. [dib-run-parts ${dir} returned non-zero exit status ${result.exitCode}]`, {
        phase,
        exitCode: result.exitCode,
        script: result.scripts.at(-1)?.script,
      });
      const errorDir = join(baseDir, 'error.d');
      if (existsSync(errorDir)) {
        logger.info('Calling error handlers.', { dir: errorDir });
        outcome.errorHandlers = await runPhaseDir(errorDir, runOptions, logger);
      }
      logger.error('Aborting...');
      return { ...outcome, exitCode: 1 };
    }
    return outcome;
  } finally {
    cancelTimeout?.();
    await lock.release();
  }
}
