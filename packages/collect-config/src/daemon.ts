// The main loop (reference/agents.md §1.3): collect, run the command when something changed (or
// --force), commit the cache only after it succeeded, then sleep with backoff. Differences, all
// in the README: the backoff returns to min_polling_interval after a change was applied; the
// hearth collector's long-poll wakes the loop at once; re-exec restarts in the same process.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ExitError, type httpRequest, type Logger } from '@hearth/agent-kit';
import { openCache, type MetadataCache } from './cache.ts';
import { collectPass, type LastGood, type PassResult } from './collect-pass.ts';
import type { HearthCollector } from './collectors/hearth.ts';
import { buildCollectors } from './collectors/registry.ts';
import type { Collector, CollectorContext } from './collectors/types.ts';
import type { CollectOptions } from './options.ts';
import { pyJsonDumps } from '@hearth/agent-kit/python-json';
import type { CommandResult } from './run-command.ts';
import { sleep as defaultSleep } from './sleep.ts';
import { writeStatus, type DaemonStatus } from './status.ts';

/** What the loop uses from the outside world; tests replace any of it. */
export interface DaemonDeps {
  http: typeof httpRequest;
  log: Logger;
  runCommand(command: string, files: readonly string[]): Promise<CommandResult>;
  /** Default: an abortable setTimeout. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Default Math.random (splay). */
  random?: () => number;
  /** Where the printed JSON map goes. Default process.stdout. */
  stdout?: NodeJS.WritableStream;
  /** Told when the command starts and ends (SIGHUP is ignored meanwhile, as in the original). */
  onCommand?(running: boolean): void;
  /** The collectors to run instead of those built from `options.collectors` (tests). */
  collectors?: Collector[];
  /** Aborting it stops the loop; reason `'reexec'` makes runCollectConfig ask for a re-exec. */
  stop?: AbortSignal;
}

/** How a run ended. */
export interface RunOutcome {
  exitCode: number;
  /** True when the caller should re-read its configuration and start again (SIGHUP, config file changed). */
  reexec: boolean;
}

/** md5 of the concatenated contents of the readable config files (the original's getfilehash). */
export function configHash(files: readonly string[]): string {
  const hash = createHash('md5');
  for (const file of files) {
    try {
      hash.update(readFileSync(file));
    } catch {
      // unreadable files count as empty, as in the original
    }
  }
  return hash.digest('hex');
}

/** Refuses zaqar when asked for (named, or its queue configured); otherwise it is silently left out of the default list. */
export function checkZaqar(options: CollectOptions): void {
  if (!options.collectors.includes('zaqar')) return;
  const zaqar = options.groups.zaqar ?? {};
  const configured = ['queue_id', 'auth_url', 'user_id'].some((name) => typeof zaqar[name] === 'string' && zaqar[name] !== '');
  if (!options.collectorsDefaulted || configured) {
    throw new ExitError(
      1,
      'the zaqar collector is not supported by hearth; use the hearth collector (HEARTH_LONG_POLL), heat (POLL_SERVER_HEAT), cfn (POLL_SERVER_CFN) or request (POLL_TEMP_URL)',
    );
  }
}

/** Runs os-collect-config with frozen options until one-time completes, the loop is stopped, or a re-exec is due. */
export async function runCollectConfig(options: CollectOptions, deps: DaemonDeps): Promise<RunOutcome> {
  checkZaqar(options);
  const stop = deps.stop ?? new AbortController().signal;
  const collectors: Collector[] = deps.collectors ?? buildCollectors(options.collectors);
  const running = new AbortController();
  const onStop = (): void => running.abort(stop.reason);
  stop.addEventListener('abort', onStop, { once: true });
  const ctx: CollectorContext = { options, log: deps.log, http: deps.http, signal: running.signal };
  const store = options.command !== undefined && !options.printOnly;

  try {
    if (!store) {
      const pass = await collectPass(collectors, ctx, undefined, new Map());
      (deps.stdout ?? process.stdout).write(`${pyJsonDumps(pass.content, { indent: 1 })}\n`);
      return { exitCode: 0, reexec: false };
    }
    return await loop(options, deps, collectors, ctx);
  } finally {
    running.abort();
    stop.removeEventListener('abort', onStop);
  }
}

/**
 * Commits `keys` after the command succeeded; true when there were any and all were committed. In the daemon a
 * commit that cannot be written is logged and left for the next pass (which then runs the command again, as when
 * it had failed); one-time throws it.
 */
async function commitOrWarn(cache: MetadataCache, keys: readonly string[], daemon: boolean, log: Logger): Promise<boolean> {
  try {
    for (const key of keys) await cache.commit(key);
  } catch (error) {
    if (!daemon) throw error;
    log.error('The command succeeded but could not be recorded in the cache; it runs again on the next pass', {
      error: (error as Error).message,
    });
    return false;
  }
  return keys.length > 0;
}

/** The store-and-run loop: one pass when one-time, else until stopped or a re-exec is due. */
async function loop(options: CollectOptions, deps: DaemonDeps, collectors: Collector[], ctx: CollectorContext): Promise<RunOutcome> {
  const sleep = deps.sleep ?? defaultSleep;
  const stop = ctx.signal!;
  const lastGood: LastGood = new Map();

  const command = options.command!;
  const daemon = !options.oneTime;
  if (daemon && options.splay > 0) await sleep(Math.floor((deps.random ?? Math.random)() * options.splay) * 1000, stop);
  const cache = openCache(options.cachedir);
  const hash = configHash(options.configFiles);
  const status: DaemonStatus = {
    pid: process.pid,
    startedAt: new Date().toISOString(),
    mode: daemon ? 'daemon' : 'one-time',
    cachedir: options.cachedir,
    collectors: [],
    updatedAt: new Date().toISOString(),
  };

  let wake = new AbortController();
  let wakePending = false;
  const hearth = collectors.find((collector): collector is HearthCollector => collector.name === 'hearth' && 'watch' in collector);
  // Ends when the run's signal aborts (runCollectConfig aborts it on every way out).
  if (daemon && hearth) {
    void hearth.watch(ctx, () => {
      deps.log.debug('hearth: new metadata; collecting now');
      wakePending = true;
      wake.abort();
    });
  }

  let exitCode = 0;
  let interval = options.minPollingInterval;
  let cacheFailing = false;
  try {
    while (!stop.aborted) {
      wakePending = false;
      let pass: PassResult | undefined;
      try {
        pass = await collectPass(collectors, ctx, cache, lastGood);
      } catch (error) {
        // The cache cannot be written (a full disk, a damaged cachedir): the daemon waits for it to be fixed
        // instead of exiting, which under systemd's Restart= only made it fail again every few seconds.
        if (!daemon) throw error;
        // One error line when the writes start failing, not one per pass.
        deps.log[cacheFailing ? 'debug' : 'error'](
          `Could not store the collected metadata; not running the command until it can. Retrying in ${interval} s`,
          { cachedir: options.cachedir, error: (error as Error).message },
        );
        cacheFailing = true;
      }
      if (pass !== undefined && cacheFailing) {
        deps.log.info('The metadata cache can be written again', { cachedir: options.cachedir });
        cacheFailing = false;
      }
      let applied = false;
      if (pass !== undefined && (pass.changedKeys.length > 0 || options.force)) {
        deps.onCommand?.(true);
        deps.log.info(`Executing ${command} with OS_CONFIG_FILES=${pass.paths.join(':')}`);
        const result = await deps.runCommand(command, pass.paths);
        deps.onCommand?.(false);
        // Not the command's text: it may carry a secret, and the status file is world-readable.
        const { command: _text, ...outcome } = result;
        status.lastCommand = { ...outcome, ok: result.exitCode === 0, files: pass.paths };
        if (result.exitCode !== 0) {
          exitCode = result.exitCode;
          deps.log.error('Command failed, will not cache new data.', { exit_code: result.exitCode, signal: result.signal });
        } else {
          applied = await commitOrWarn(cache, pass.changedKeys, daemon, deps.log);
        }
        if (daemon && configHash(options.configFiles) !== hash) {
          deps.log.info('The configuration changed: re-executing');
          return { exitCode, reexec: true };
        }
      } else if (pass !== undefined) {
        deps.log.debug('No changes detected.');
      }
      if (applied) interval = options.minPollingInterval;
      // After a pass that stored nothing (and ran nothing) the status keeps the collectors of the last one that did.
      if (pass !== undefined) status.collectors = pass.statuses;
      status.updatedAt = new Date().toISOString();
      status.nextPollInSeconds = daemon ? interval : undefined;
      if (hearth) status.hearth = hearth.watchState();
      await writeStatus(options.statusFile, status).catch((error: unknown) =>
        deps.log.warn('could not write the status file', { path: options.statusFile, error: String(error) }),
      );
      if (!daemon) break;
      if (!wakePending) {
        deps.log.info(`Sleeping ${interval.toFixed(2)} seconds.`);
        const sleeping = (wake = new AbortController());
        // Not AbortSignal.any: on Node 20 each call leaves an entry on `stop` for the life of the run.
        const onStop = (): void => sleeping.abort();
        if (stop.aborted) onStop();
        else stop.addEventListener('abort', onStop, { once: true });
        try {
          await sleep(interval * 1000, sleeping.signal);
        } finally {
          stop.removeEventListener('abort', onStop);
        }
      }
      interval = Math.min(interval * 2, options.pollingInterval);
    }
  } finally {
    wake.abort();
  }
  return { exitCode, reexec: stop.aborted && stop.reason === 'reexec' };
}
