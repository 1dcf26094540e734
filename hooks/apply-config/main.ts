import { runHook, runTool, toolCommand, toolResult, type HookContext, type HookResult } from '../_lib/index.ts';

const USAGE = `usage: apply-config < deployment.json

heat-config hook for group "apply-config": runs os-apply-config with no arguments and the hook's own
environment, so it renders its templates from ALL collected metadata (OS_CONFIG_FILES or
os_config_files.json), not only this deployment's config. The deployment's config, inputs and
outputs are not used.
Prints {deploy_stdout, deploy_stderr, deploy_status_code (os-apply-config's exit code)}.

env:
  HEAT_APPLY_CONFIG_CMD  the command to run (default os-apply-config on PATH)
  OS_APPLY_CONFIG        hearth alias of HEAT_APPLY_CONFIG_CMD, used when that is unset
`;

/** The os-apply-config to run: HEAT_APPLY_CONFIG_CMD, else OS_APPLY_CONFIG, else os-apply-config on PATH. */
function applyConfigCommand(env: NodeJS.ProcessEnv): string {
  return toolCommand('HEAT_APPLY_CONFIG_CMD', toolCommand('OS_APPLY_CONFIG', 'os-apply-config', env), env);
}

/** Runs os-apply-config over all collected metadata and reports how it ended. */
async function applyConfig({ log, env }: HookContext): Promise<HookResult> {
  return toolResult(await runTool(applyConfigCommand(env), [], { log }));
}

runHook({ group: 'apply-config', usage: USAGE, run: applyConfig });
