// `dib-run-parts [--list] DIR`: diskimage-builder's run-parts, with its output and exit statuses.
import { ExitError, runMain } from '@hearth/agent-kit/exit';
import { runParts } from './run-parts.ts';
import { listParts, runPartsPattern } from './select-parts.ts';
import { formatDateLikeCoreutils } from './report.ts';

const USAGE = `Usage: dib-run-parts [OPTION] scripts_directory
Option:
      --list  print names of all valid files

Examples:
      dib-run-parts --list /usr/libexec/os-refresh-config/configure.d/
      dib-run-parts /usr/libexec/os-refresh-config/configure.d/`;

void runMain(async (argv) => {
  const args = [...argv];
  if (args[0] === '--help' || args[0] === '-h') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const list = args[0] === '--list';
  if (list) args.shift();
  const dir = args[0] ?? '';
  if (argv.length === 0) throw new ExitError(1, USAGE);
  let pattern;
  try {
    pattern = runPartsPattern(process.env.RUN_PARTS_REGEX);
    if (list) {
      for (const name of listParts(dir, pattern)) process.stdout.write(`${dir}/${name}\n`);
      return 0;
    }
    return (await runParts(dir, { pattern })).exitCode;
  } catch (error) {
    throw new ExitError(1, `dib-run-parts ${formatDateLikeCoreutils(new Date())} ${(error as Error).message}\n${USAGE}`);
  }
});
