// What os-collect-config prints about itself: its --help text, and its argv with credentials masked for the log.
import { REDACTED } from '@hearth/agent-kit';
import { flagTable, longFlagCandidates } from './cli-flags.ts';
import { cliFlag, flagSpellings, OPTION_TABLE } from './option-table.ts';

/** Options whose values are credentials (`[heat] password`, `[cfn]`/`[hearth] secret_access_key`, zaqar's password). */
const SECRET_OPTIONS = new Set(['password', 'secret_access_key']);

/** argv as it may be logged: the value of every credential flag (`--hearth-secret-access-key S`, `--heat-password=S`, `--heat-pass S`) is `***`. */
export function argvForLog(argv: readonly string[]): string[] {
  const flags = flagTable();
  const secretFlags = new Set(OPTION_TABLE.filter((spec) => SECRET_OPTIONS.has(spec.name)).flatMap((spec) => flagSpellings(spec)));
  // A prefix stands for every flag it may abbreviate: an ambiguous one is refused, but must not be logged either.
  const isSecretFlag = (arg: string): boolean =>
    arg.startsWith('--') &&
    arg !== '--' &&
    longFlagCandidates(arg.slice(2).split('=', 1)[0] ?? '', flags).some((flag) => secretFlags.has(flag));
  return argv.map((arg, index) => {
    const equals = arg.indexOf('=');
    if (equals !== -1 && isSecretFlag(arg)) return `${arg.slice(0, equals)}=${REDACTED}`;
    const previous = argv[index - 1];
    return previous !== undefined && !previous.includes('=') && isSecretFlag(previous) ? REDACTED : arg;
  });
}

/** The `--help` text. */
export function helpText(): string {
  const lines = [
    'usage: os-collect-config [options] [collectors ...]',
    '',
    'Collects metadata from the configured sources into the cache and runs --command when it changed,',
    'with OS_CONFIG_FILES set to the cache files. Without --command: collect once, print, exit.',
    '',
    `positional: collectors (default: heat_local ec2 cfn heat request local zaqar; also: hearth)`,
    '',
    'options:',
    '  -h, --help              show this help and exit',
    '  --version               print the version and exit',
    '  --config-file PATH      config file (repeatable; default ~/os-collect-config.conf or /etc/os-collect-config.conf)',
    '  --config-dir DIR        also read DIR/*.conf (default: /etc/os-collect-config.conf.d if it exists)',
    '  -d, --debug, --nodebug  debug logging (or [DEFAULT] debug)',
    '  --log-format json|text  log lines on stderr (default json)',
    '  --log-file PATH         log to this file instead of stderr (also --logfile, [DEFAULT] log_file)',
    '  --log-dir DIR           directory of --log-file, else log to DIR/os-collect-config.log (also --logdir)',
    '  --use-syslog, --use-journal, --use-json, --watch-log-file, --log-config-append PATH, --log-date-format FMT,',
    "  --syslog-log-facility NAME (and their --no forms): oslo.log's, accepted for compatibility; no effect",
    '  --status [--json]       print the running daemon state (last poll per collector, last command) and exit',
    '  --status-file PATH      where the daemon keeps that state',
  ];
  for (const spec of OPTION_TABLE) {
    if (spec.name === 'collectors' && spec.group === 'DEFAULT') continue;
    const flag = `${spec.short ? `-${spec.short}, ` : ''}--${cliFlag(spec)}${spec.kind === 'bool' ? '' : spec.kind === 'float' ? ' N' : ' VALUE'}`;
    lines.push(`  ${flag.padEnd(34)} ${spec.help}${spec.kind === 'multi' ? ' (repeatable)' : ''}`);
  }
  return `${lines.join('\n')}\n`;
}
