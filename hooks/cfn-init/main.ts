import { writeFileAtomic } from '@hearth/agent-kit';
import { parsePyJson, pyJsonDumps, pyPlainData } from '@hearth/agent-kit/python-json';
import { join } from 'node:path';
import {
  describeValue,
  ensureDir,
  failedResult,
  hookPath,
  isObject,
  runHook,
  runTool,
  toolCommand,
  toolResult,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: cfn-init < deployment.json

heat-config hook for group "cfn-init": the config (an AWS::CloudFormation::Init object, or JSON text
of one) is written as {"AWS::CloudFormation::Init": config} to <dir>/last_metadata (mode 0700,
replaced whole), then cfn-init runs with no arguments, so it reads that file. cfn-init logs to its
own file (/var/log/cfn-init.log), so deploy_stdout is usually empty.
Prints {deploy_stdout, deploy_stderr, deploy_status_code (cfn-init's exit code)}.

env:
  HEAT_CFN_INIT_LAST_METADATA_DIR  default /var/cache/heat-cfntools
  HEAT_CFN_INIT_CMD                default cfn-init (on PATH)
`;

/** The config as the object cfn-init runs, or why it cannot be one. */
function initConfig(config: unknown): Record<string, unknown> | string {
  let parsed = config;
  if (typeof config === 'string') {
    try {
      // As json.loads reads it: `1.0` stays a float and big integers keep every digit in the files cfn-init writes.
      parsed = pyPlainData(parsePyJson(config));
    } catch {
      return `config must be an AWS::CloudFormation::Init object or JSON text of one, got ${describeValue(config)}`;
    }
  }
  return isObject(parsed) ? parsed : `config must be an AWS::CloudFormation::Init object, got ${describeValue(config)}`;
}

/** Writes the metadata cfn-init falls back to and runs cfn-init. */
async function runCfnInit({ deployment, log, env }: HookContext): Promise<HookResult> {
  const config = initConfig(deployment.config);
  if (typeof config === 'string') return failedResult(`cfn-init hook: ${config}`);
  const dir = ensureDir(hookPath('HEAT_CFN_INIT_LAST_METADATA_DIR', '/var/cache/heat-cfntools', env));
  // The original's json.dump: numbers as Python wrote them (JSON.stringify turns 1.0 into 1 and rounds big integers).
  await writeFileAtomic(join(dir, 'last_metadata'), pyJsonDumps({ 'AWS::CloudFormation::Init': config }), { mode: 0o700 });
  return toolResult(await runTool(toolCommand('HEAT_CFN_INIT_CMD', 'cfn-init', env), [], { log }));
}

runHook({ group: 'cfn-init', usage: USAGE, run: runCfnInit });
