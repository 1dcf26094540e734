import type { Command } from 'commander';
import { EXIT, ExitError } from '../errors.ts';
import { parseId } from '../flag-values.ts';
import { formatJson } from '../output.ts';
import { openSession, type CliDeps } from '../session.ts';

/** Text of one output value: a string as it is (with a final newline), anything else as JSON. */
export function rawOutputText(value: unknown): string {
  if (typeof value === 'string') return value.endsWith('\n') ? value : `${value}\n`;
  return `${JSON.stringify(value)}\n`;
}

/** Registers `hearth deployment output ID [NAME]`. */
export function registerDeploymentOutputCommand(deployment: Command, deps: CliDeps): void {
  deployment
    .command('output')
    .description('print one output value raw, or all outputs as JSON')
    .argument('<id>', 'deployment id')
    .argument('[name]', 'output name, e.g. deploy_stdout; default: all outputs')
    .action(async (id: string, name: string | undefined, _flags: unknown, cmd: Command) => {
      const session = openSession(cmd, deps);
      const deploymentId = parseId(id, 'deployment');
      const found = await session.client().getDeployment(deploymentId);
      const outputs = found.output_values ?? {};
      if (name === undefined) {
        session.io.stdout.write(formatJson(outputs));
        return;
      }
      if (!Object.hasOwn(outputs, name)) {
        const known = Object.keys(outputs);
        throw new ExitError(EXIT.FAILED, `deployment ${id} has no output ${JSON.stringify(name)}`, {
          code: 'ERR_OUTPUT_NOT_FOUND',
          hint:
            known.length > 0
              ? `its outputs are: ${known.join(', ')}`
              : `it has no outputs yet (status ${found.status}); \`hearth deployment wait ${id}\` waits for them`,
        });
      }
      session.io.stdout.write(session.out.json ? formatJson(outputs[name]) : rawOutputText(outputs[name]));
    });
}
