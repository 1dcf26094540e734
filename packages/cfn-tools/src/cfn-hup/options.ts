// cfn-hup's command line: the original's -c/--config, -f/--no-daemon, -v/--verbose, plus --interval-seconds
// (tests, beyond the original) and --log-format.
import { join } from 'node:path';
import { ExitError } from '@hearth/agent-kit/exit';
import type { AgentPaths } from '@hearth/agent-kit/paths';
import { parseFlags, stringFlag } from '../shared/args.ts';
import type { HupConfigFiles } from './config.ts';

/** The usage text. */
export const CFN_HUP_USAGE = `usage: cfn-hup [-c HOOKS_DIR] [-f|--no-daemon] [-v] [--interval-seconds N] [--log-format json|text]
Watches stack resource metadata and runs hooks (post.add, post.update, post.remove, service.restarted).
Reads <cfn dir>/cfn-hup.conf [main] (stack, credential-file, region, interval in minutes, verbose, url,
action-timeout in seconds for each hook action: default 3600, 0 no limit),
<cfn dir>/hooks.conf and HOOKS_DIR/*.conf (default <cfn dir>/hooks.d).`;

const FLAGS = {
  config: { type: 'string', short: 'c' },
  'no-daemon': { type: 'boolean', short: 'f', default: false },
  verbose: { type: 'boolean', short: 'v', default: false },
  'interval-seconds': { type: 'string' },
  'log-format': { type: 'string', default: 'json' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** cfn-hup's options after parsing. */
export interface CfnHupOptions {
  files: HupConfigFiles;
  /** One pass, then exit (the original always did only this). */
  noDaemon: boolean;
  verbose: boolean;
  /** Seconds between passes, overriding [main] interval. */
  intervalSeconds: number | undefined;
  logFormat: 'json' | 'text';
  help: boolean;
}

/** Parses argv; a usage error is ExitError(2). */
export function parseCfnHupArgs(argv: string[], paths: Pick<AgentPaths, 'cfnConfigDir'>): Readonly<CfnHupOptions> {
  const { values, positionals } = parseFlags(argv, FLAGS, CFN_HUP_USAGE);
  if (positionals.length > 0) throw new ExitError(2, `unexpected argument '${positionals[0]}'\n${CFN_HUP_USAGE}`);
  const intervalText = stringFlag(values['interval-seconds']);
  const intervalSeconds = intervalText === undefined ? undefined : Number(intervalText);
  if (intervalSeconds !== undefined && (!Number.isInteger(intervalSeconds) || intervalSeconds < 1)) {
    throw new ExitError(2, `--interval-seconds '${intervalText}' must be a whole number ≥ 1`);
  }
  const logFormat = values['log-format'];
  if (logFormat !== 'json' && logFormat !== 'text') throw new ExitError(2, `--log-format '${logFormat}' must be json or text`);
  return Object.freeze({
    files: Object.freeze({
      mainFile: join(paths.cfnConfigDir, 'cfn-hup.conf'),
      hooksFile: join(paths.cfnConfigDir, 'hooks.conf'),
      hooksDir: stringFlag(values.config) ?? join(paths.cfnConfigDir, 'hooks.d'),
    }),
    noDaemon: values['no-daemon'],
    verbose: values.verbose,
    intervalSeconds,
    logFormat,
    help: values.help,
  });
}
