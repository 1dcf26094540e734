import { writeFileAtomic } from '@hearth/agent-kit';
import { pyJsonDumps } from '@hearth/agent-kit/python-json';
import { existsSync, rmSync } from 'node:fs';
import { basename, isAbsolute, join, resolve } from 'node:path';
import {
  describeValue,
  ensureDir,
  failedResult,
  hookDirs,
  hookResult,
  inputValue,
  isObject,
  runHook,
  runTool,
  toolCommand,
  toolResult,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';
import { parsePythonLiteral } from './python-literal.ts';

const USAGE = `usage: docker-compose < deployment.json

heat-config hook for group "docker-compose". The project dir is <working>/<deployment name>.
CREATE/UPDATE/...: writes the config to <project>/docker-compose.yml (mode 0600, replaced whole; an
object is written as JSON, which YAML reads), writes each env_file the services reference whose
content the env_files input supplies, then runs "docker-compose up -d --no-build" in the project dir.
DELETE: runs "docker-compose down" there and removes docker-compose.yml; nothing to do when the
project has no docker-compose.yml. An empty config does nothing. Both succeed (the original crashed).
Prints {deploy_stdout, deploy_stderr, deploy_status_code (docker-compose's exit code)}.

inputs:
  env_files  a list of {file_name, content} (a list, JSON text, or a Python literal as the original read it)

env:
  HEAT_DOCKER_COMPOSE_WORKING  default /var/lib/heat-config/heat-config-docker-compose
  HEAT_DOCKER_COMPOSE_CMD      default docker-compose (on PATH)
`;

/** One entry of the env_files input. */
interface EnvFile {
  file_name: string;
  content: string;
}

/** The env_files input as a list of {file_name, content}, or why it cannot be read. */
function envFiles(value: unknown): EnvFile[] | string {
  if (value === undefined || value === null || value === '') return [];
  let list: unknown = value;
  if (typeof value === 'string') {
    try {
      list = JSON.parse(value) as unknown;
    } catch {
      try {
        list = parsePythonLiteral(value);
      } catch (error) {
        return `env_files input is neither JSON nor a Python literal: ${error instanceof Error ? error.message : String(error)}`;
      }
    }
  }
  if (!Array.isArray(list)) return `env_files input must be a list of {file_name, content}, got ${describeValue(value)}`;
  const entries = list.filter(
    (entry): entry is EnvFile => isObject(entry) && typeof entry.file_name === 'string' && typeof entry.content === 'string',
  );
  return entries.length === list.length
    ? entries
    : `env_files input has entries without a string file_name and content: ${describeValue(value)}`;
}

/** env_file paths the services reference (string or list), or undefined when the config is YAML text we do not parse. */
function referencedEnvFiles(config: unknown): string[] | undefined {
  let parsed: unknown = config;
  if (typeof config === 'string') {
    try {
      parsed = JSON.parse(config) as unknown;
    } catch {
      return undefined;
    }
  }
  if (!isObject(parsed)) return undefined;
  const services = isObject(parsed.services) ? parsed.services : parsed;
  return Object.values(services).flatMap((service) => {
    const envFile = isObject(service) ? service.env_file : undefined;
    return (Array.isArray(envFile) ? envFile : [envFile]).filter((file): file is string => typeof file === 'string');
  });
}

/** Stops and removes the project's containers (the fix for the original's crash on DELETE). */
async function deleteProject(command: string, project: string, context: HookContext): Promise<HookResult> {
  const composeFile = join(project, 'docker-compose.yml');
  if (!existsSync(composeFile)) {
    context.log.info('nothing to delete: no docker-compose.yml', { project });
    return hookResult({ stdout: '', stderr: '', status: 0 });
  }
  const result = await runTool(command, ['down'], { cwd: project, log: context.log });
  if (!result.failed) rmSync(composeFile, { force: true });
  return toolResult(result);
}

/** Writes the compose file and env files, then brings the project up. */
async function runDockerCompose(context: HookContext): Promise<HookResult> {
  const { deployment, log, env } = context;
  const command = toolCommand('HEAT_DOCKER_COMPOSE_CMD', 'docker-compose', env);
  if (deployment.name === '.' || deployment.name === '..' || deployment.name.includes('/') || deployment.name.includes('\0')) {
    return failedResult(`docker-compose hook: the deployment name ${JSON.stringify(deployment.name)} cannot name a project directory`);
  }
  const project = join(hookDirs('docker-compose', env).working, deployment.name);
  if (inputValue(deployment, 'deploy_action') === 'DELETE') return deleteProject(command, project, context);
  const config = deployment.config;
  if (config === null || config === '' || (isObject(config) && Object.keys(config).length === 0)) {
    log.warn('configuration is empty: nothing to do');
    return hookResult({ stdout: '', stderr: '', status: 0 });
  }
  const files = envFiles(inputValue(deployment, 'env_files'));
  if (typeof files === 'string') return failedResult(`docker-compose hook: ${files}`);
  ensureDir(project);
  // Structured config as JSON (which YAML reads), its numbers as given: 1.0 stays a float, big integers whole.
  const text = typeof config === 'string' ? config : `${pyJsonDumps(config, { indent: 2, ensureAscii: false })}\n`;
  await writeFileAtomic(join(project, 'docker-compose.yml'), text, { mode: 0o600 });
  const referenced = referencedEnvFiles(config);
  for (const file of files) {
    const wanted =
      referenced === undefined || referenced.some((name) => name === file.file_name || basename(name) === basename(file.file_name));
    if (!wanted) continue;
    const target = isAbsolute(file.file_name) ? file.file_name : resolve(project, file.file_name);
    await writeFileAtomic(target, file.content, { mode: 0o600 });
    log.info('wrote env file', { path: target });
  }
  return toolResult(await runTool(command, ['up', '-d', '--no-build'], { cwd: project, log }));
}

runHook({ group: 'docker-compose', usage: USAGE, run: runDockerCompose });
