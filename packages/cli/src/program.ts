import { Command } from 'commander';
import packageJson from '../package.json' with { type: 'json' };
import { registerConfigCommands } from './commands/config.ts';
import { registerDeploymentCommands } from './commands/deployment.ts';
import { registerEventsCommand } from './commands/events.ts';
import { registerServerCommands } from './commands/server.ts';
import { registerStackCommands } from './commands/stack.ts';
import { registerWaitConditionCommands } from './commands/waitcondition.ts';
import { registerAlarmCommands } from './commands/alarm.ts';
import { registerMetricsCommands } from './commands/metrics.ts';
import { registerScalingGroupCommands } from './commands/scaling-group.ts';
import { registerScalingPolicyCommands } from './commands/scaling-policy.ts';
import { addExamples, PROGRAM_EXAMPLES } from './help-examples.ts';
import { DEFAULT_PROJECT, DEFAULT_URL } from './options.ts';
import type { CliDeps } from './session.ts';

/** Help text shown at the end of every command's --help. */
const MAIN_HELP_AFTER = `
Environment:
  HEARTH_URL      hearth-server URL (default ${DEFAULT_URL})
  HEARTH_TOKEN    admin token (hearth-server writes it to <data-dir>/admin-token)
  HEARTH_PROJECT  project id (default ${DEFAULT_PROJECT})

Exit codes:
  0   ok
  1   operation failed (FAILED deployment or wait condition, hearth-server answered 4xx/5xx)
  2   timeout (deployment wait / waitcondition wait --timeout)
  64  usage error (bad flags or arguments, no token)
  69  hearth-server unreachable
  130 interrupted (Ctrl-C): a wait or --follow stopped
  141 stdout closed by its reader (hearth events --follow | head -2), as a shell reports coreutils`;

/**
 * Rewrites commander's `error: ...` message as `hearth: ... (ERR_USAGE)` with a pointer to --help;
 * its suggestion (`\n(Did you mean list?)`, on a line of its own) goes into the hint.
 */
export function formatUsageMessage(commanderMessage: string): string {
  const message = commanderMessage.trim().replace(/^error:\s*/, '');
  const [, problem = message, suggestion] = /^(.*)\n\(Did you mean (.*)\?\)$/.exec(message) ?? [];
  const help = 'run the command with --help to see its usage';
  const hint = suggestion === undefined ? help : `did you mean ${suggestion}? Or ${help}`;
  return `hearth: ${problem} (ERR_USAGE)\nhearth: hint: ${hint}\n`;
}

/** Builds the `hearth` command tree; it never exits the process (commander errors are thrown). */
export function buildProgram(deps: CliDeps): Command {
  const program = new Command('hearth')
    .description(
      'Operate hearth-server: register servers, create software configs, deploy them and follow deployments; stacks and wait conditions.',
    )
    .version(packageJson.version, '--version', 'print the hearth version')
    .option('--url <url>', `hearth-server URL (env HEARTH_URL; default ${DEFAULT_URL})`)
    .option('--token <token>', 'admin token (env HEARTH_TOKEN)')
    .option('--project <id>', `project id (env HEARTH_PROJECT; default ${DEFAULT_PROJECT})`)
    .option('--json', 'machine output: a single JSON document on stdout')
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    .configureOutput({
      writeOut: (text) => deps.io.stdout.write(text),
      writeErr: (text) => deps.io.stderr.write(text),
      outputError: (text, write) => write(formatUsageMessage(text)),
    })
    .showSuggestionAfterError()
    .exitOverride()
    // 'afterAll': `hearth server create --help` is where a new operator looks for HEARTH_TOKEN and exit codes.
    .addHelpText('afterAll', MAIN_HELP_AFTER);
  addExamples(program, PROGRAM_EXAMPLES);
  registerStackCommands(program, deps);
  registerServerCommands(program, deps);
  registerConfigCommands(program, deps);
  registerDeploymentCommands(program, deps);
  registerWaitConditionCommands(program, deps);
  registerEventsCommand(program, deps);
  registerAlarmCommands(program, deps);
  registerMetricsCommands(program, deps);
  registerScalingGroupCommands(program, deps);
  registerScalingPolicyCommands(program, deps);
  return program;
}
