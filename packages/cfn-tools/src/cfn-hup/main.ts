// cfn-hup: one pass with --no-daemon (exit 1 when a resource or an action failed, 128 + the signal when SIGTERM or
// SIGINT cut it short), else a daemon until SIGTERM/SIGINT.
import { constants } from 'node:os';
import { createLogger } from '@hearth/agent-kit/logger';
import { agentPaths } from '@hearth/agent-kit/paths';
import type { HttpFunction } from '../shared/describe-stack-resource.ts';
import { configFileList, filesSignature, loadHupConfig, type HupConfig } from './config.ts';
import { runDaemon } from './daemon.ts';
import { CFN_HUP_USAGE, parseCfnHupArgs } from './options.ts';
import { runPass } from './pass.ts';
import { systemServiceManager, type ServiceManager } from './services.ts';

/** Injected dependencies (tests). */
export interface CfnHupDeps {
  env?: NodeJS.ProcessEnv;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream;
  http?: HttpFunction;
  services?: ServiceManager;
  /** Stops the daemon; default: SIGTERM or SIGINT. */
  signal?: AbortSignal;
}

/** Runs cfn-hup with `argv`. */
export async function cfnHupMain(argv: string[], deps: CfnHupDeps = {}): Promise<number> {
  const env = deps.env ?? process.env;
  const paths = agentPaths(env);
  const options = parseCfnHupArgs(argv, paths);
  if (options.help) {
    (deps.stdout ?? process.stdout).write(`${CFN_HUP_USAGE}\n`);
    return 0;
  }
  const first = loadHupConfig(options.files);
  const verbose = options.verbose || first.main.verbose;
  const log = createLogger({
    name: 'cfn-hup',
    level: verbose ? 'debug' : 'info',
    format: options.logFormat,
    stream: deps.stderr ?? process.stderr,
  });
  // what was skipped, so that a hook that never fires has its reason in the log
  const load = (): HupConfig => {
    const config = loadHupConfig(options.files);
    for (const warning of config.warnings) log.warn(warning);
    return config;
  };
  for (const warning of first.warnings) log.warn(warning);
  const services = deps.services ?? systemServiceManager();
  const pass = (config: HupConfig, signal?: AbortSignal) =>
    runPass({ config, paths, log, services, env, ...(deps.http !== undefined && { http: deps.http }), ...(signal && { signal }) });

  const stop = deps.signal ? { signal: deps.signal, received: undefined } : stopOnSignals();
  const stopping = stop.signal;
  if (options.noDaemon) {
    // Without the handler SIGTERM would end node at once and leave the running action's processes behind.
    const report = await pass(first, stopping);
    if (!stopping.aborted) return report.failed ? 1 : 0;
    const received = stop.received?.() ?? 'SIGTERM';
    log.warn('cfn-hup stopped before its pass finished: the running action was stopped and no later hook ran', {
      signal: received,
    });
    return 128 + constants.signals[received];
  }
  let loaded = true;
  await runDaemon({
    loadConfig: () => {
      if (loaded) {
        loaded = false;
        return first;
      }
      return load();
    },
    currentSignature: () => filesSignature(configFileList(options.files)),
    // A running action is stopped on SIGTERM, so stopping never waits for a hung one.
    runPass: (config) => pass(config, stopping),
    intervalSeconds: options.intervalSeconds,
    log,
    signal: stopping,
  });
  return 0;
}

/** An AbortSignal fired by the first SIGTERM or SIGINT, and which of them it was. */
function stopOnSignals(): { signal: AbortSignal; received: () => 'SIGTERM' | 'SIGINT' | undefined } {
  const controller = new AbortController();
  let received: 'SIGTERM' | 'SIGINT' | undefined;
  for (const name of ['SIGTERM', 'SIGINT'] as const) {
    process.once(name, () => {
      received ??= name;
      controller.abort();
    });
  }
  return { signal: controller.signal, received: () => received };
}
