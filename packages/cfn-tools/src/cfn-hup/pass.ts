// One cfn-hup pass: for each resource the hooks watch, fetch its metadata, fire post.add / post.update /
// post.remove for the hooks whose path changed, restart ensureRunning services that stopped (service.restarted).
import { existsSync } from 'node:fs';
import { removeStaleTempFiles } from '@hearth/agent-kit/atomic-file';
import type { AgentPaths } from '@hearth/agent-kit/paths';
import type { Logger } from '@hearth/agent-kit/logger';
import { ExitError } from '@hearth/agent-kit/exit';
import { readCredentialFile } from '../shared/credentials.ts';
import type { HttpFunction } from '../shared/describe-stack-resource.ts';
import { fetchMetadata } from '../shared/fetch-metadata.ts';
import { metadataCacheFiles, readJsonFile } from '../shared/metadata-cache.ts';
import type { HookConfig, HookTrigger, HupConfig } from './config.ts';
import { changeEvent } from './events.ts';
import { clearPending, pendingFile, readPending, savePending } from './pending.ts';
import { runAction, type ActionResult } from './run-action.ts';
import { servicesToKeepRunning, type ServiceManager } from './services.ts';

/** What a pass needs. */
export interface PassContext {
  config: HupConfig;
  paths: Pick<AgentPaths, 'heatCfntoolsDir' | 'cfnMetadataHintFile' | 'cfnCacheDir' | 'heatLocalDataPath'>;
  log: Logger;
  services: ServiceManager;
  env?: NodeJS.ProcessEnv;
  http?: HttpFunction;
  /** Aborts when cfn-hup stops: a running action is stopped and no further hook fires. Default none. */
  signal?: AbortSignal;
}

/** One hook that fired. */
export interface FiredHook {
  hook: string;
  event: HookTrigger;
  resource: string;
  result: ActionResult;
}

/** What a pass did. */
export interface PassReport {
  fired: FiredHook[];
  /** Resources whose metadata could not be had, with why. */
  errors: Array<{ resource: string; message: string }>;
  /** True when a resource failed or an action failed. */
  failed: boolean;
}

async function fire(ctx: PassContext, hook: HookConfig, event: HookTrigger, report: PassReport): Promise<void> {
  if (ctx.signal?.aborted) {
    ctx.log.info('hook not run: cfn-hup is stopping', { hook: hook.name, event });
    return;
  }
  ctx.log.info('running hook', { hook: hook.name, event, resource: hook.resource, runas: hook.runas ?? null });
  const timeoutSeconds = ctx.config.main.actionTimeoutSeconds;
  const result = await runAction(hook.action, hook.runas, {
    env: ctx.env,
    timeoutMs: timeoutSeconds > 0 ? timeoutSeconds * 1000 : undefined,
    signal: ctx.signal,
  });
  const fields = { hook: hook.name, event, exitCode: result.exitCode, signal: result.signal, durationMs: Math.round(result.durationMs) };
  if (result.timedOut) {
    ctx.log.error('hook action timed out and was stopped; later hooks and changes go on', {
      ...fields,
      timeoutSeconds,
      fix: 'if it needs longer, raise [main] action-timeout (seconds, 0 for no limit) in cfn-hup.conf',
      stdout: result.stdout,
      stderr: result.stderr,
    });
  } else if (result.aborted) {
    ctx.log.warn('hook action stopped: cfn-hup is stopping', { ...fields, stdout: result.stdout, stderr: result.stderr });
  } else if (result.failed) ctx.log.error('hook action failed', { ...fields, stdout: result.stdout, stderr: result.stderr });
  else ctx.log.info('hook action done', { ...fields, stdout: result.stdout, stderr: result.stderr });
  report.fired.push({ hook: hook.name, event, resource: hook.resource, result });
}

/** savePending; a file that cannot be written (a full disk) is logged and the hooks fire all the same. */
async function savePendingOrWarn(ctx: PassContext, file: string, before: unknown): Promise<void> {
  try {
    await savePending(file, before);
  } catch (error) {
    ctx.log.warn('cannot record the change being applied: if this pass is cut short, the next one will not fire it again', {
      file,
      error: (error as Error).message,
    });
  }
}

/**
 * The cached metadata to compare with, as readCachedMetadata reads it, saying which file a crash or a wrong hand
 * damaged: without it the hooks fire post.update as on a first pass, and the log would not say why.
 */
function cachedBefore(ctx: PassContext, resource: string): unknown {
  const files = metadataCacheFiles(ctx.paths, resource);
  for (const file of new Set([files.resourceFile, files.lastFile])) {
    const read = readJsonFile(file);
    if (read.kind === 'ok') return read.value;
    if (read.kind === 'invalid' || existsSync(file))
      ctx.log.warn('cached metadata cannot be read: comparing with the next cached copy, else firing as on a first pass', {
        resource,
        file,
        reason: read.reason,
      });
  }
  return undefined;
}

/** Runs one pass over every resource the hooks name, in the order they first appear. */
export async function runPass(ctx: PassContext): Promise<PassReport> {
  const report: PassReport = { fired: [], errors: [], failed: false };
  const { main, hooks } = ctx.config;
  // A cfn-hup (or cfn-init) killed mid-write leaves its temp file, metadata with whatever secrets it holds: nothing else removes it.
  const leftovers = removeStaleTempFiles(ctx.paths.cfnCacheDir);
  if (leftovers.length > 0)
    ctx.log.warn('removed temp files left by a writer killed mid-write', { dir: ctx.paths.cfnCacheDir, files: leftovers });
  const resources = [...new Set(hooks.map((hook) => hook.resource))];
  for (const resource of resources) {
    const watching = hooks.filter((hook) => hook.resource === resource);
    const pending = pendingFile(ctx.paths, resource);
    const interrupted = readPending(pending);
    if (interrupted)
      ctx.log.info('an earlier pass stopped before all hooks of a change ran: comparing with the metadata before it', { resource });
    else if (existsSync(pending))
      ctx.log.warn('the record of a change being applied cannot be read: comparing with the cached metadata instead', {
        resource,
        file: pending,
      });
    const before = interrupted ? interrupted.before : cachedBefore(ctx, resource);
    let fetched;
    try {
      fetched = await fetchMetadata({
        stack: main.stack,
        resource,
        credentials: await readCredentialFile(main.credentialFile, ctx.env),
        url: main.url,
        region: main.region,
        paths: ctx.paths,
        log: ctx.log,
        ...(ctx.http !== undefined && { http: ctx.http }),
      });
    } catch (error) {
      const message = error instanceof ExitError || error instanceof Error ? error.message : String(error);
      ctx.log.error('cannot get metadata', { resource, error: message });
      report.errors.push({ resource, message });
      report.failed = true;
      continue;
    }
    if (fetched.source === 'server') {
      let saved = interrupted !== undefined;
      for (const hook of watching) {
        const event = changeEvent(before, fetched.metadata, hook);
        if (event === undefined) continue;
        if (!hook.triggers.includes(event)) {
          ctx.log.debug('event not subscribed', { hook: hook.name, event });
          continue;
        }
        if (!saved) {
          await savePendingOrWarn(ctx, pending, before);
          saved = true;
        }
        await fire(ctx, hook, event, report);
      }
      // Stopped mid-way, the hooks left (and the one stopped) fire on the next pass.
      if (!ctx.signal?.aborted) clearPending(pending);
    } else {
      ctx.log.warn('server unreachable: no change events from local metadata', {
        resource,
        origin: fetched.origin,
        reason: fetched.fallbackReason,
      });
    }
    for (const service of servicesToKeepRunning(fetched.metadata)) {
      if (ctx.services.isRunning(service)) continue;
      const failure = ctx.services.start(service);
      if (failure !== undefined) {
        ctx.log.error('cannot restart service', { resource, service, error: failure });
        report.failed = true;
        continue;
      }
      ctx.log.info('service restarted', { resource, service });
      for (const hook of watching.filter((candidate) => candidate.triggers.includes('service.restarted'))) {
        await fire(ctx, hook, 'service.restarted', report);
      }
    }
  }
  if (report.fired.some((fired) => fired.result.failed)) report.failed = true;
  return report;
}
