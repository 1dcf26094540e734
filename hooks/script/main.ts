import { writeFileAtomic } from '@hearth/agent-kit';
import { join } from 'node:path';
import {
  clearOutputs,
  collectOutputs,
  describeValue,
  ensureDir,
  failedResult,
  hookDirs,
  outputsBase,
  inputEnv,
  runHook,
  runTool,
  toolResult,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: script < deployment.json

heat-config hook for group "script": writes the deployment's config (a script: run by its #! line, by /bin/sh without one) to
<working>/<id> (mode 0700) and runs it directly in <working>, with one env var per input and
heat_outputs_path=<outputs>/<id>. An input no env var can hold (a name with = or NUL, a value with NUL)
fails the deployment without running the script. Declared outputs are read from <outputs>/<id>.<name>.
Prints {deploy_stdout, deploy_stderr, deploy_status_code (the script's exit code), <outputs>...}.

options:
  expose_credentials   pass deploy_password and deploy_signal_id to the script (default false)

env:
  HEAT_SCRIPT_WORKING  default /var/lib/heat-config/heat-config-script
  HEAT_SCRIPT_OUTPUTS  default /var/run/heat-config/heat-config-script
`;

/** Runs the deployment's script and reports its exit code, output and declared outputs. */
async function runScript({ deployment, log, env }: HookContext): Promise<HookResult> {
  if (typeof deployment.config !== 'string' || deployment.config.trim() === '') {
    return failedResult(`script hook: config must be the text of a script (got ${describeValue(deployment.config)})`);
  }
  const inputs = inputEnv(deployment, { includeCredentials: deployment.options.expose_credentials === true });
  // A script run without one of its inputs could do harm with the empty value it reads instead (and Heat's hook
  // failed on such an input too): the deployment fails, saying which input and why.
  if (inputs.skipped.length > 0)
    return failedResult(
      `script hook: the script was not run: ${inputs.skipped.join('; ')}; no environment variable can hold that: change the input`,
    );
  const dirs = hookDirs('script', env);
  ensureDir(dirs.working);
  ensureDir(dirs.outputs);
  const scriptPath = join(dirs.working, deployment.id);
  await writeFileAtomic(scriptPath, deployment.config, { mode: 0o700 });
  const base = outputsBase(dirs.outputs, deployment);
  clearOutputs(base, deployment);
  const result = await runTool(scriptPath, [], { cwd: dirs.working, env: { ...inputs.env, heat_outputs_path: base }, log });
  return toolResult(result, collectOutputs(base, deployment));
}

runHook({ group: 'script', usage: USAGE, run: runScript });
