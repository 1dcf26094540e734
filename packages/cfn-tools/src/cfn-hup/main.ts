// cfn-hup: one pass with --no-daemon (exit 1 when a resource or an action failed), else a daemon until
// SIGTERM/SIGINT.
import { createLogger } from '@hearth/agent-kit/logger';
import { agentPaths } from '@hearth/agent-kit/paths';
import type { HttpFunction } from '../shared/describe-stack-resource.ts';
import { configFileList, filesSignature, loadHupConfig } from './config.ts';
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
  const services = deps.services ?? systemServiceManager();
  const pass = (config: typeof first, signal?: AbortSignal) =>
    runPass({ config, paths, log, services, env, ...(deps.http !== undefined && { http: deps.http }), ...(signal && { signal }) });

  if (options.noDaemon) return (await pass(first)).failed ? 1 : 0;

  let signal = deps.signal;
  if (!signal) {
    const controller = new AbortController();
    for (const name of ['SIGTERM', 'SIGINT'] as const) process.once(name, () => controller.abort());
    signal = controller.signal;
  }
  const stopping = signal;
  let loaded = true;
  await runDaemon({
    loadConfig: () => {
      if (loaded) {
        loaded = false;
        return first;
      }
      return loadHupConfig(options.files);
    },
    currentSignature: () => filesSignature(configFileList(options.files)),
    // A running action is stopped on SIGTERM, so stopping never waits for a hung one.
    runPass: (config) => pass(config, stopping),
    intervalSeconds: options.intervalSeconds,
    log,
    signal,
  });
  return 0;
}
