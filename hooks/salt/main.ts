import { writeFileAtomic } from '@hearth/agent-kit/atomic-file';
import { pyJsonDumps } from '@hearth/agent-kit/python-json';
import { join } from 'node:path';
import {
  CREDENTIAL_INPUTS,
  clearOutputs,
  collectOutputs,
  ensureDir,
  hookDirs,
  hookResult,
  isObject,
  outputsBase,
  runHook,
  runTool,
  statusCode,
  toolCommand,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: salt < deployment.json

heat-config hook for group "salt": writes the config to <working>/<id>.sls (an object is written as JSON,
which is YAML) and applies it masterless:
  CMD --local --retcode-passthrough --out json --file-root <working> --pillar-root <working>/<id>_pillar state.sls <id>
Every input (JSON type kept), heat_config_id and heat_outputs_path=<outputs>/<id> are pillar data, so
states read them with pillar['name'] or salt['config.get']('name'). Declared outputs are read from
<outputs>/<id>.<name>.
Prints {deploy_stdout, deploy_stderr, deploy_status_code, <outputs>...}: status 0 when every state's result
is true, else salt-call's exit code (2 when a state failed but it exited 0). On failure salt's return is
in deploy_stderr, after salt-call's own stderr.

options:
  expose_credentials   also put deploy_password and deploy_signal_id in the pillar (default false)

env:
  HEAT_SALT_WORKING    default /var/lib/heat-config/heat-config-salt
  HEAT_SALT_OUTPUTS    default /var/run/heat-config/heat-config-salt
  HEAT_SALT_CMD        default salt-call
  SALT_MINION_CONFIG   passed through: salt-call reads its minion config there (default /etc/salt/minion)
`;

/** The pillar top file: one pillar SLS with the deployment's data for every minion. */
const PILLAR_TOP = "base:\n  '*':\n    - heat_config\n";

/**
 * The state file's text: a string as is, null as '', anything else as JSON (which YAML reads), with its numbers
 * as given (1.0 a float, big integers whole; JSON.stringify would change both) and its text unescaped.
 */
function stateText(config: unknown): string {
  if (typeof config === 'string') return config;
  if (config === null || config === undefined) return '';
  return `${pyJsonDumps(config, { indent: 2, ensureAscii: false })}\n`;
}

/** What salt's JSON return says: whether some state failed, or undefined when it is not a state return at all. */
function stateFailed(stdout: string): boolean | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  const states = isObject(parsed) ? parsed.local : undefined;
  if (!isObject(states)) return undefined;
  const results = Object.values(states);
  if (!results.every(isObject)) return undefined;
  return results.some((state) => state.result === false);
}

/** Writes the state and pillar files, runs salt-call state.sls and reports the outcome by the states' results. */
async function runSalt({ deployment, log, env }: HookContext): Promise<HookResult> {
  const dirs = hookDirs('salt', env);
  ensureDir(dirs.outputs);
  ensureDir(dirs.working);
  const base = outputsBase(dirs.outputs, deployment);
  const exposeCredentials = deployment.options.expose_credentials === true;
  // A Map keeps the inputs' order; json.dumps' text keeps a Float input a Float when salt's json reader loads it.
  const pillar = new Map<string, unknown>([['heat_config_id', deployment.id]]);
  for (const input of deployment.inputs) if (exposeCredentials || !CREDENTIAL_INPUTS.has(input.name)) pillar.set(input.name, input.value);
  pillar.set('heat_outputs_path', base);

  const pillarRoot = ensureDir(join(dirs.working, `${deployment.id}_pillar`));
  await writeFileAtomic(join(pillarRoot, 'top.sls'), PILLAR_TOP, { mode: 0o600 });
  // `#!json` makes salt read the file as JSON only: no Jinja pass over the inputs' values.
  await writeFileAtomic(join(pillarRoot, 'heat_config.sls'), `#!json\n${pyJsonDumps(pillar, { indent: 2 })}\n`, { mode: 0o600 });
  await writeFileAtomic(join(dirs.working, `${deployment.id}.sls`), stateText(deployment.config), { mode: 0o700 });
  clearOutputs(base, deployment);

  const args = ['--local', '--retcode-passthrough', '--out', 'json', '--file-root', dirs.working, '--pillar-root', pillarRoot];
  const result = await runTool(toolCommand('HEAT_SALT_CMD', 'salt-call', env), [...args, 'state.sls', deployment.id], {
    cwd: dirs.working,
    log,
  });
  const outputs = collectOutputs(base, deployment);
  const failed = stateFailed(result.stdout);
  if (failed === false) return hookResult({ ...result, status: 0 }, outputs);
  const code = statusCode(result);
  const status = code !== 0 ? code : 2;
  log.error('salt state failed', { state: `${deployment.id}.sls`, status });
  return hookResult({ stdout: '', stderr: result.stderr + result.stdout, status, stderrCutChars: result.stderrCutChars }, outputs);
}

runHook({ group: 'salt', usage: USAGE, run: runSalt });
