// Removing the state of deployments gone from the deployments list. Neither 55-heat-config nor heat-config
// ever did: with a fresh derived-config id on every action, the deployed dir grew for the life of the VM.
// `<id>.json` is what says "done, never run again", so an id is only pruned once it has been missing from
// every list for the prune age (a run that saw an empty or partial list must never make a deployment run
// twice), and never while anything of it is still in flight. The files its hook kept in its working dir (a
// script hook's copy of the script for each action, a puppet manifest, an ansible playbook) go with it.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic, type Logger } from '@hearth/agent-kit';
import { hookDirs } from '@hearth/agent-kit/hook-dirs';
import { DeploymentMarkers } from './markers.ts';
import type { HeatConfigOptions } from './options.ts';

/** `<deployed>/<this>`: when each id with state files was first seen missing from the list. Hidden: never an id's file. */
export const ABSENT_RECORD_NAME = '.heat-config.absent.json';

/** Ids pruned by one run at most, so that a deployed dir grown for years does not hold up the configure phase. */
export const PRUNE_MAX_PER_RUN = 200;

/** What pruneAbsent needs: the deployed dir, the outbox and the prune age. */
export type PruneOptions = Pick<HeatConfigOptions, 'deployedDir' | 'outboxDir' | 'pruneAfterSeconds'>;

/** The record file's content. */
interface AbsentRecord {
  version: 1;
  /** id -> when it was first seen missing from the list (ISO 8601). */
  absentSince: Record<string, string>;
}

const ID = /^[\w.-]+$/;

function isId(value: string): boolean {
  return ID.test(value) && !value.startsWith('.');
}

/**
 * The id a deployed-dir file belongs to (see markers.ts), or undefined for other files (the lock, the record,
 * temp files). `<y>.notify.json` is y's result, unless an id `y.notify` is listed: then it is that one's
 * `<id>.json`. (Heat's and hearth's ids are UUIDs; pruneAbsent also never removes a marker file of a listed id
 * or of another id it keeps.)
 */
export function stateFileOwner(name: string, listedIds: ReadonlySet<string>): string | undefined {
  let id: string | undefined;
  if (name.startsWith('.') && name.endsWith('.hook')) id = name.slice(1, -'.hook'.length);
  else if (name.endsWith('.running')) id = name.slice(0, -'.running'.length);
  else if (name.endsWith('.json')) {
    id = name.slice(0, -'.json'.length);
    if (id.endsWith('.notify') && !listedIds.has(id)) id = id.slice(0, -'.notify'.length);
  }
  return id !== undefined && isId(id) ? id : undefined;
}

/** Every marker path of an id, `<id>.json` last: it goes only once the rest has. */
function markerPaths(dir: string, id: string): string[] {
  const markers = new DeploymentMarkers(dir, id);
  return [markers.notifyPath, markers.hookPath, markers.runningPath, markers.deployedPath];
}

/** A hook group that can name a hook file (Heat's groups are names like `script` or `docker-compose`). */
const GROUP = /^[\w-]+$/;

/**
 * What the hook of `id` left in its working and outputs dirs (the hook's group is in `<id>.json`): entries
 * named `<id>`, `<id>.*` or `<id>_*`, as Heat's hooks name them, except those that name an id in `others`
 * the same way (never another deployment's files). Nothing when `<id>.json` is gone or names no group.
 */
function hookFiles(deployedDir: string, id: string, others: readonly string[], env: NodeJS.ProcessEnv): string[] {
  let group: unknown;
  try {
    group = (JSON.parse(readFileSync(join(deployedDir, `${id}.json`), 'utf8')) as { group?: unknown } | null)?.group;
  } catch {
    return [];
  }
  if (typeof group !== 'string' || !GROUP.test(group)) return [];
  const owns = (name: string, owner: string) => name === owner || name.startsWith(`${owner}.`) || name.startsWith(`${owner}_`);
  const longer = others.filter((other) => other !== id && other.startsWith(id));
  const { working, outputs } = hookDirs(group, env);
  const paths: string[] = [];
  for (const dir of new Set([working, outputs])) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const name of names) if (owns(name, id) && !longer.some((other) => owns(name, other))) paths.push(join(dir, name));
  }
  return paths;
}

/** The record as id -> ms since the epoch, or whether it is missing or damaged. */
function readRecord(path: string): Map<string, number> | 'missing' | 'damaged' {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'damaged';
  }
  try {
    const parsed = JSON.parse(text) as Partial<AbsentRecord> | null;
    const since = parsed?.absentSince;
    if (parsed?.version !== 1 || typeof since !== 'object' || since === null || Array.isArray(since)) return 'damaged';
    const record = new Map<string, number>();
    // A time that does not parse is left out: that id counts as absent since now.
    for (const [id, time] of Object.entries(since))
      if (typeof time === 'string' && !Number.isNaN(Date.parse(time))) record.set(id, Date.parse(time));
    return record;
  } catch {
    return 'damaged';
  }
}

/**
 * The deployment ids of heat-config-notify's (hearth's config-notify) queued signals. An entry it cannot read is
 * one it cannot deliver either, so it holds nothing back. Throws when the outbox cannot be listed.
 */
function outboxDeploymentIds(outboxDir: string): Set<string> {
  const ids = new Set<string>();
  let names: string[];
  try {
    names = readdirSync(outboxDir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return ids;
    throw error;
  }
  for (const name of names) {
    if (name.startsWith('.') || !name.endsWith('.json')) continue;
    try {
      const { deploymentId } = JSON.parse(readFileSync(join(outboxDir, name), 'utf8')) as { deploymentId?: unknown };
      if (typeof deploymentId === 'string') ids.add(deploymentId);
    } catch {
      // Unreadable for config-notify as well: never delivered, kept there for an operator.
    }
  }
  return ids;
}

/** Why an id that is due is kept anyway; undefined when it may go. */
function holdOf(markers: DeploymentMarkers, id: string, queued: ReadonlySet<string>): string | undefined {
  if (existsSync(markers.runningPath)) return 'its running marker is there (interrupted, or its result was never handed over)';
  if (markers.liveHook() !== undefined) return 'its hook is still running';
  if (queued.has(id)) return 'its signal is still queued in the outbox';
  return undefined;
}

/**
 * Records the ids that have state files in the deployed dir but are not in `listedIds` (the ids of the list
 * just run) as absent since now, forgets those listed again, and removes the files of those absent for at
 * least the prune age (at most PRUNE_MAX_PER_RUN, oldest first), except while one has a running marker, a live
 * hook or a queued signal. `now` is the time in ms (default Date.now()). Returns the ids pruned. Never throws:
 * housekeeping never fails a run.
 */
export async function pruneAbsent(
  listedIds: ReadonlySet<string>,
  options: PruneOptions,
  log: Logger,
  now = Date.now(),
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  if (options.pruneAfterSeconds === 0) return [];
  const recordPath = join(options.deployedDir, ABSENT_RECORD_NAME);
  try {
    const present = new Set(
      readdirSync(options.deployedDir)
        .map((name) => stateFileOwner(name, listedIds))
        .filter((id) => id !== undefined),
    );
    const read = readRecord(recordPath);
    if (read === 'damaged') log.warn(`${recordPath} is damaged; every deployment missing from the list counts as missing since now`);
    const recorded = read instanceof Map ? read : new Map<string, number>();
    const absent = new Map<string, number>();
    for (const id of present) {
      if (listedIds.has(id)) continue;
      const since = recorded.get(id);
      // Missing, or in the future (the clock went back): from now.
      absent.set(id, since === undefined || since > now ? now : since);
    }
    const due = [...absent]
      .filter(([, since]) => now - since >= options.pruneAfterSeconds * 1000)
      .sort(([a, x], [b, y]) => x - y || a.localeCompare(b));
    const pruned: string[] = [];
    if (due.length > 0) {
      const queued = outboxDeploymentIds(options.outboxDir);
      const pruning = new Map<string, number>();
      for (const [id, since] of due) {
        if (pruning.size >= PRUNE_MAX_PER_RUN) {
          log.info(`More deployments are due for pruning than one run prunes (${PRUNE_MAX_PER_RUN}); the next run goes on`);
          break;
        }
        const hold = holdOf(new DeploymentMarkers(options.deployedDir, id), id, queued);
        if (hold === undefined) pruning.set(id, since);
        else log.debug(`Keeping the state of ${id}, missing from the list: ${hold}`, { id });
      }
      // A file that is also a marker of an id kept (x.notify.json of x and x.notify) stays.
      const kept = new Set(
        [...listedIds, ...present].filter((id) => !pruning.has(id)).flatMap((id) => markerPaths(options.deployedDir, id)),
      );
      const everyId = [...new Set([...listedIds, ...present])];
      for (const [id, since] of pruning) {
        const files = markerPaths(options.deployedDir, id).filter((path) => !kept.has(path) && existsSync(path));
        // All its files are another id's: that id decides when they go.
        if (files.length === 0) continue;
        // The hook's files first: `<id>.json`, which names the hook, goes last.
        files.unshift(...hookFiles(options.deployedDir, id, everyId, env));
        try {
          for (const path of files) await rm(path, { force: true, recursive: true });
        } catch (error) {
          log.warn(`Could not remove the state of ${id}; trying again on the next run`, {
            id,
            code: (error as NodeJS.ErrnoException).code,
          });
          continue;
        }
        absent.delete(id);
        pruned.push(id);
        log.info(`Pruned the state of ${id}, missing from the deployments list since ${new Date(since).toISOString()}`, {
          id,
          files: files.length,
        });
      }
    }
    const record: AbsentRecord = {
      version: 1,
      absentSince: Object.fromEntries(
        [...absent].sort(([a], [b]) => a.localeCompare(b)).map(([id, since]) => [id, new Date(since).toISOString()]),
      ),
    };
    const unchanged = read instanceof Map && sameTimes(read, absent);
    if (!unchanged && !(read === 'missing' && absent.size === 0))
      await writeFileAtomic(recordPath, JSON.stringify(record, null, 2), { mode: 0o600 });
    return pruned;
  } catch (error) {
    log.warn('Could not prune the state of deployments missing from the list; trying again on the next run', {
      code: (error as NodeJS.ErrnoException).code,
      error: (error as Error).message,
    });
    return [];
  }
}

function sameTimes(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  return a.size === b.size && [...a].every(([id, since]) => b.get(id) === since);
}
