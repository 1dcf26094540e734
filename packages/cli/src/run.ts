import { describeError } from './error-report.ts';
import { EXIT } from './errors.ts';
import { resolveGlobalOptions, type GlobalFlags } from './options.ts';
import { buildProgram } from './program.ts';
import type { CliDeps } from './session.ts';

/** Runs `hearth` with the given arguments (without node and script); resolves to the exit code. */
export async function run(argv: readonly string[], deps: CliDeps): Promise<number> {
  const program = buildProgram(deps);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return EXIT.OK;
  } catch (error) {
    const { url } = resolveGlobalOptions(program.opts<GlobalFlags>(), deps.io.env).options;
    const report = describeError(error, { url });
    for (const line of report.lines) deps.io.stderr.write(`${line}\n`);
    return report.exitCode;
  }
}
