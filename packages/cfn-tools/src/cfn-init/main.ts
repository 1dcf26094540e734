// cfn-init: fetch the resource's metadata (server, else last_metadata / cfn-init-data), then apply
// its AWS::CloudFormation::Init. Exit 0 when every step succeeded, 1 when one failed (the message
// names the section, the key and the exit code).
import { ExitError } from '@hearth/agent-kit/exit';
import { agentPaths } from '@hearth/agent-kit/paths';
import type { Logger } from '@hearth/agent-kit/logger';
import { jsNumbers } from '@hearth/agent-kit/python-json';
import { loadCredentials } from '../shared/credentials.ts';
import { fetchMetadata } from '../shared/fetch-metadata.ts';
import { applyInit } from './apply.ts';
import { ConfigSetError } from './config-sets.ts';
import { isObject, pathWhich, processRunner, StepError, type SectionContext } from './context.ts';
import { fetchUrl } from './fetch-url.ts';
import { cfnInitLogFile, createCfnInitLogger } from './log.ts';
import { parseCfnInitArgs, USAGE, type CfnInitOptions } from './options.ts';

/** The key cfn-init reads in the resource metadata. */
export const INIT_KEY = 'AWS::CloudFormation::Init';

/** What runCfnInit can be given instead of the real thing (tests). */
export interface CfnInitDeps {
  env?: NodeJS.ProcessEnv;
  /** Replaces the section context's parts (runner, fetchUrl, which, sleep). */
  context?: Partial<Omit<SectionContext, 'changes' | 'log'>>;
  /** Where log lines go besides the log file. Default process.stderr. */
  stderr?: NodeJS.WritableStream;
}

/** The AWS::CloudFormation::Init object of `metadata`; ExitError(1) when there is none. */
export function initOf(metadata: unknown): Record<string, unknown> {
  // The sections work on plain numbers (a PyFloat of the parsed metadata as its number), as JSON.parse gives them.
  const parsed: unknown = jsNumbers(typeof metadata === 'string' ? JSON.parse(metadata) : metadata);
  const init = isObject(parsed) ? parsed[INIT_KEY] : undefined;
  if (!isObject(init) || Object.keys(init).length === 0)
    throw new ExitError(
      1,
      `the metadata has no ${INIT_KEY} object (keys: ${isObject(parsed) ? Object.keys(parsed).join(', ') || 'none' : typeof parsed})`,
    );
  return init;
}

async function run(options: Readonly<CfnInitOptions>, log: Logger, deps: CfnInitDeps): Promise<number> {
  const env = deps.env ?? process.env;
  const credentials = await loadCredentials({ accessKey: options.accessKey, secretKey: options.secretKey, env });
  const fetched = await fetchMetadata({
    stack: options.stack,
    resource: options.resource,
    credentials,
    url: options.url,
    region: options.region,
    paths: agentPaths(env),
    log,
  });
  log.info('metadata read', { source: fetched.source, origin: fetched.origin, changed: fetched.changed });
  const init = initOf(fetched.metadata);
  const context = {
    runner: processRunner(),
    fetchUrl,
    which: pathWhich(env),
    sleep: (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)),
    ...deps.context,
    log,
  };
  try {
    const result = await applyInit(context, init, options.configSets);
    log.info(result.stopped ? 'cfn-init stopped by waitAfterCompletion forever' : 'cfn-init done', { configs: result.configs });
    return 0;
  } catch (error) {
    if (error instanceof StepError) {
      log.error('step failed', { section: error.section, key: error.key, exitCode: error.exitCode, error: error.message });
      throw new ExitError(1, error.message);
    }
    if (error instanceof ConfigSetError) {
      log.error('configSets', { error: error.message });
      throw new ExitError(1, error.message);
    }
    throw error;
  }
}

/** cfn-init's main: parses argv, logs to the log file and stderr, returns the exit code (throws ExitError on failure). */
export async function runCfnInit(argv: string[], deps: CfnInitDeps = {}): Promise<number> {
  const options = parseCfnInitArgs(argv);
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { log, close } = createCfnInitLogger({
    file: cfnInitLogFile(deps.env),
    verbose: options.verbose,
    format: options.logFormat,
    ...(deps.stderr === undefined ? {} : { stderr: deps.stderr }),
  });
  try {
    return await run(options, log, deps);
  } catch (error) {
    if (!(error instanceof ExitError)) log.error('cfn-init failed', { error });
    throw error;
  } finally {
    close();
  }
}
