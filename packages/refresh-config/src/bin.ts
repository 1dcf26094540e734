// `os-refresh-config`: parse, then print or run; only runMain exits.
import { agentPaths } from '@hearth/agent-kit/paths';
import { createLogger } from '@hearth/agent-kit/logger';
import { ExitError, runMain } from '@hearth/agent-kit/exit';
import { resolveBaseDir } from './base-dir.ts';
import { parseRefreshArgs, USAGE, UsageError, type RefreshLogLevel } from './options.ts';
import { PHASES, refreshConfig } from './refresh.ts';
import { loggerRunPartsReporter, textRunPartsReporter } from './report.ts';

const LEVELS: Record<RefreshLogLevel, 'debug' | 'info' | 'warn' | 'error'> = {
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
  CRITICAL: 'error',
};

void runMain(async (argv) => {
  let options;
  try {
    options = parseRefreshArgs(argv);
  } catch (error) {
    if (error instanceof UsageError) throw new ExitError(2, `${USAGE.split('\n\n')[0]}\nos-refresh-config: error: ${error.message}`);
    throw error;
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const logger = createLogger({ name: 'os-refresh-config', format: options.logFormat, level: LEVELS[options.logLevel] });
  const base = resolveBaseDir();
  if (base.deprecated)
    logger.warn(`Base directory ${base.dir} is deprecated. The recommended base directory is ${agentPaths().refreshBaseDir}`);
  if (options.printBase) {
    process.stdout.write(`${base.dir}\n`);
    return 0;
  }
  if (options.printPhases) {
    process.stdout.write(`${PHASES.join('\t')}\n`);
    return 0;
  }
  const result = await refreshConfig({
    baseDir: base.dir,
    lockFile: options.lockFile ?? agentPaths().refreshLockFile,
    timeoutSeconds: options.timeoutSeconds,
    logger,
    reporter: options.logFormat === 'text' ? textRunPartsReporter() : loggerRunPartsReporter(logger),
  });
  return result.exitCode;
});
