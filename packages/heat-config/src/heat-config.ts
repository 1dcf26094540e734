// A whole heat-config run over the deployments list: 55-heat-config's main().
import { chmodSync, existsSync, lstatSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { acquireLock, removeStaleTempFiles, type Lock, type Logger } from '@hearth/agent-kit';
import { deployOne, type DeployOneOptions, type DeploymentOutcome } from './deploy-one.ts';
import { ensureDeployedDir } from './markers.ts';
import type { HeatConfigOptions } from './options.ts';
import { pruneAbsent, type PruneOptions } from './prune.ts';
import { isStopping } from './run-hook.ts';

/** Lock in the deployed dir held for a whole run, so a marker found running belongs to a run that died. */
export const LOCK_FILE_NAME = '.heat-config.lock';

/** What a run did: its exit code and each deployment's outcome, in list order. */
export interface HeatConfigResult {
  exitCode: number;
  outcomes: DeploymentOutcome[];
}

/**
 * Runs every deployment of `options.configFile`, then prunes the state of those missing from it long enough
 * (pruneAbsent). Exit code 1 when the list is missing or a result could not be handed to heat-config-notify
 * (or written); 0 otherwise, failed hooks included.
 */
export async function runHeatConfig(
  options: Pick<HeatConfigOptions, 'configFile' | 'oldDeployedDir'> & DeployOneOptions & PruneOptions,
  log: Logger,
): Promise<HeatConfigResult> {
  if (!existsSync(options.configFile)) {
    log.error(`No config file ${options.configFile}`);
    return { exitCode: 1, outcomes: [] };
  }
  if ((lstatSync(options.configFile).mode & 0o7777) !== 0o600) chmodSync(options.configFile, 0o600);
  let lock: Lock;
  try {
    if (ensureDeployedDir(options.deployedDir, options.oldDeployedDir) === 'migrated')
      log.debug(`Migrating deployed state from ${options.oldDeployedDir} to ${options.deployedDir}`);
    lock = await acquireLock(join(options.deployedDir, LOCK_FILE_NAME), { wait: true });
  } catch (error) {
    // A full disk, or a deployed dir that is a file: starting afresh elsewhere would run every deployment again.
    log.error(
      `Cannot use the deployed dir ${options.deployedDir} (${(error as Error).message}); no deployment was run: free space or fix it, then run again`,
      { deployedDir: options.deployedDir, code: (error as NodeJS.ErrnoException).code },
    );
    return { exitCode: 1, outcomes: [] };
  }
  try {
    // A heat-config killed mid-write leaves its temp file (the deployment, or its result): nothing else removes it.
    const leftovers = removeStaleTempFiles(options.deployedDir);
    if (leftovers.length > 0)
      log.warn(`Removed ${leftovers.length} temp file(s) a heat-config killed mid-write left in ${options.deployedDir}`, {
        files: leftovers,
      });
    let deployments: unknown;
    try {
      deployments = JSON.parse(await readFile(options.configFile, 'utf8'));
    } catch {
      log.warn(`${options.configFile} is not valid JSON; nothing to deploy`);
      return { exitCode: 0, outcomes: [] };
    }
    if (!Array.isArray(deployments)) {
      log.warn(`${options.configFile} holds no list of deployments; nothing to deploy`);
      return { exitCode: 0, outcomes: [] };
    }
    const outcomes: DeploymentOutcome[] = [];
    let exitCode = 0;
    for (const deployment of deployments as unknown[]) {
      if (isStopping()) break;
      try {
        const outcome = await deployOne(deployment, options, log);
        outcomes.push(outcome);
        if (outcome === 'notify-failed') exitCode = 1;
      } catch (error) {
        log.error('Deployment failed in heat-config itself', { error });
        outcomes.push('notify-failed');
        exitCode = 1;
      }
    }
    // Only a list read whole says what is gone (an unreadable one returned above); a stopped run prunes nothing.
    if (!isStopping()) {
      const listedIds = new Set<string>();
      for (const entry of deployments as unknown[]) {
        const id = (entry as { id?: unknown } | null)?.id;
        if (typeof id === 'string') listedIds.add(id);
      }
      await pruneAbsent(listedIds, options, log);
    }
    return { exitCode, outcomes };
  } finally {
    await lock.release();
  }
}
