// One pass over the collectors (the original's collect_all), with two fixes: a source that fails
// keeps its last good outputs in OS_CONFIG_FILES, and an unexpected collector error is logged
// and treated as "unavailable" instead of killing the daemon.
import { redactText, type Logger } from '@hearth/agent-kit';
import type { MetadataCache } from './cache.ts';
import type { Collector, CollectorContext, CollectOutcome } from './collectors/types.ts';
import type { Output } from './explode.ts';
import type { CollectorStatus } from './status.ts';

/** What the last good data of each collector was, kept across passes of one daemon run. */
export type LastGood = Map<string, { outputs: Output[]; at: string }>;

/** The result of one pass. */
export interface PassResult {
  /** Keys whose content differs from what the command last consumed. */
  changedKeys: string[];
  /** Every key collected (or kept) this pass, in order. */
  keys: string[];
  /** `<cachedir>/<key>.json` for each key (store mode). */
  paths: string[];
  /** key -> content (print mode). */
  content: Record<string, unknown>;
  statuses: CollectorStatus[];
}

async function outcomeOf(
  collector: Collector,
  ctx: CollectorContext,
  log: Logger,
): Promise<CollectOutcome | { kind: 'error'; reason: string }> {
  try {
    return await collector.collect(ctx);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    log.error(`Source [${collector.name}] failed unexpectedly; keeping its last data`, { error: reason });
    return { kind: 'error', reason };
  }
}

/** Runs every collector in order; stores outputs in `cache` when given (else returns them as `content`). */
export async function collectPass(
  collectors: readonly Collector[],
  ctx: CollectorContext,
  cache: MetadataCache | undefined,
  lastGood: LastGood,
): Promise<PassResult> {
  const result: PassResult = { changedKeys: [], keys: [], paths: [], content: {}, statuses: [] };
  for (const collector of collectors) {
    const started = Date.now();
    const startedMonotonic = performance.now(); // the duration survives a step of the wall clock (NTP)
    const outcome = await outcomeOf(collector, ctx, ctx.log);
    let outputs: Output[] = [];
    if (outcome.kind === 'data') {
      outputs = outcome.outputs;
      lastGood.set(collector.name, { outputs, at: new Date(started).toISOString() });
    } else if (outcome.kind === 'not-configured') {
      ctx.log.debug(`Source [${collector.name}] Not configured.`, { reason: outcome.reason });
    } else {
      if (outcome.kind === 'unavailable') ctx.log.warn(`Source [${collector.name}] Unavailable.`, { reason: outcome.reason });
      else if (outcome.kind === 'unchanged') ctx.log.debug(`Source [${collector.name}] unchanged.`, { reason: outcome.reason });
      outputs = lastGood.get(collector.name)?.outputs ?? [];
      if (outputs.length > 0 && outcome.kind !== 'unchanged') ctx.log.info(`Source [${collector.name}]: keeping its last good data`);
    }
    for (const [key, content] of outputs) {
      result.keys.push(key);
      if (cache) {
        const stored = await cache.store(key, content);
        if (stored.damagedLast !== undefined)
          ctx.log.warn(`${stored.damagedLast} cannot be read (damaged?); counting ${key} as changed, so the command runs again`, {
            file: stored.damagedLast,
          });
        if (stored.changed && !result.changedKeys.includes(key)) result.changedKeys.push(key);
        result.paths.push(stored.path);
      } else {
        result.content[key] = content;
      }
    }
    result.statuses.push({
      name: collector.name,
      lastPollAt: new Date(started).toISOString(),
      outcome: outcome.kind,
      // The status file is world-readable: a reason quoting a malformed document or a signed URL must not carry its secrets.
      ...(outcome.kind === 'data' ? {} : { reason: redactText(outcome.reason) }),
      keys: outputs.map(([key]) => key),
      ...(lastGood.has(collector.name) ? { lastDataAt: lastGood.get(collector.name)!.at } : {}),
      durationMs: Math.round(performance.now() - startedMonotonic),
    });
  }
  if (cache && result.changedKeys.length > 0) {
    await cache.storeMetaList(result.keys);
    cache.backup(ctx.options.backupCachedir);
  }
  return result;
}
