import { createLogger, runMain, type Logger } from '@hearth/agent-kit';
import { HookInputError, parseDeployment, type Deployment } from './deployment.ts';
import { convertInput } from './inputs.ts';
import { failedResult, formatResult, type HookResult } from './result.ts';

/** What a hook's run function gets. */
export interface HookContext {
  /** The deployment read from stdin, validated, inputs converted by type. */
  deployment: Deployment;
  /** Logger writing JSON lines to stderr (HEARTH_LOG_FORMAT=text for people, HEARTH_LOG_LEVEL=debug for more). */
  log: Logger;
  /** The environment the hook runs in (paths and tool commands are read from it). */
  env: NodeJS.ProcessEnv;
}

/** One hook: its group name, its --help text, and what it does with a deployment. */
export interface HookDefinition {
  /** The group name, e.g. `script`; names the logger and the default dirs. */
  group: string;
  /** Printed for --help/-h: synopsis, inputs, options, outputs, env. */
  usage: string;
  /** Runs the deployment and returns the result to print. Tool failure belongs in deploy_status_code, not a throw. */
  run(context: HookContext): Promise<HookResult>;
}

/** Where a hook reads and writes; process streams by default, replaced in tests. */
export interface HookIo {
  argv: string[];
  env: NodeJS.ProcessEnv;
  readStdin(): Promise<string>;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** Reads all of this process's stdin as UTF-8. */
export async function readProcessStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Runs a hook: --help prints usage (exit 0); otherwise reads the deployment on stdin, runs it, prints one result
 * JSON on stdout and returns 0. When the deployment is unusable or the hook itself fails (not its tool), it
 * still prints a result, with deploy_status_code 1 and the reason in deploy_stderr, and returns 1.
 */
export async function hookMain(definition: HookDefinition, io: HookIo): Promise<number> {
  if (io.argv.includes('--help') || io.argv.includes('-h')) {
    io.stdout.write(definition.usage.endsWith('\n') ? definition.usage : `${definition.usage}\n`);
    return 0;
  }
  const level = io.env.HEARTH_LOG_LEVEL === 'debug' ? 'debug' : 'info';
  const log = createLogger({
    name: `hook-${definition.group}`,
    format: io.env.HEARTH_LOG_FORMAT === 'text' ? 'text' : 'json',
    level,
    stream: io.stderr,
  });
  if (io.argv.length > 0) log.warn('arguments ignored: a hook reads its deployment on stdin', { argv: io.argv });
  let result: HookResult;
  let exitCode = 0;
  try {
    const { deployment, warnings } = parseDeployment(await io.readStdin(), convertInput);
    for (const warning of warnings) log.warn(warning, { deployment: deployment.id });
    const deploymentLog = log.child({ deployment: deployment.id });
    deploymentLog.info('running deployment', { deploymentName: deployment.name, group: deployment.group });
    result = await definition.run({ deployment, log: deploymentLog, env: io.env });
    deploymentLog.info('deployment finished', { status: result.deploy_status_code });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    log.error(error instanceof HookInputError ? 'unusable deployment' : 'hook failed', { error: message });
    result = failedResult(`${definition.group} hook: ${message}`);
    exitCode = 1;
  }
  io.stdout.write(formatResult(result));
  return exitCode;
}

/** The executable's entry: hookMain over the process's argv, env and streams, exiting with its code. */
export function runHook(definition: HookDefinition): void {
  runMain((argv) =>
    hookMain(definition, { argv, env: process.env, readStdin: readProcessStdin, stdout: process.stdout, stderr: process.stderr }),
  );
}
