// cfn-init's flags, as heat-cfntools' (-s -r --access-key --secret-key --region -c) plus --url,
// -v and --log-format; parsed, then frozen.
import { ExitError } from '@hearth/agent-kit/exit';
import { parseFlags, stringFlag } from '../shared/args.ts';

/** Usage text printed by --help and with a usage error. */
export const USAGE = `usage: cfn-init [-s STACK -r RESOURCE --access-key KEY --secret-key SECRET [--region REGION] [--url URL]]
                [-c CONFIGSETS] [-v] [--log-format json|text]

Applies the AWS::CloudFormation::Init metadata of a stack resource. With no credentials it reads
the local copy (last_metadata, then cfn-init-data). Logs to /var/log/cfn-init.log and stderr.

  -s, --stack STACK        the stack name
  -r, --resource RESOURCE  the logical resource id
  --access-key KEY         access key (with --secret-key; otherwise local metadata)
  --secret-key SECRET      secret key; without it, the secret stored with
                           hearth-agent secret set cfn/KEY < FILE (keeps it out of ps)
  --region REGION          accepted, not used (as in heat-cfntools)
  --url URL                the CloudFormation API endpoint (default: cfn-metadata-server, cfn-boto-cfg)
  -c, --configsets LIST    comma-separated configSets to run (default: default)
  -v, --verbose            debug logging
  --log-format FORMAT      json (default) or text`;

/** cfn-init's options after parsing. */
export interface CfnInitOptions {
  /** `-s`; default none (local metadata). */
  stack: string | undefined;
  /** `-r`; default none. */
  resource: string | undefined;
  /** `--access-key`; default none. */
  accessKey: string | undefined;
  /** `--secret-key`; default none. */
  secretKey: string | undefined;
  /** `--region`; unused. */
  region: string | undefined;
  /** `--url`; default from the heat-cfntools files. */
  url: string | undefined;
  /** `-c`, comma list; default undefined (the `default` set, or `config` without configSets). */
  configSets: string | undefined;
  /** `-v`: debug logging. Default false. */
  verbose: boolean;
  /** `--log-format`. Default json. */
  logFormat: 'json' | 'text';
  /** `--help`. */
  help: boolean;
}

/** Parses cfn-init's argv; a usage error is ExitError(2). */
export function parseCfnInitArgs(argv: string[]): Readonly<CfnInitOptions> {
  const { values, positionals } = parseFlags(
    argv,
    {
      stack: { type: 'string', short: 's' },
      resource: { type: 'string', short: 'r' },
      'access-key': { type: 'string' },
      'secret-key': { type: 'string' },
      region: { type: 'string' },
      url: { type: 'string' },
      configsets: { type: 'string', short: 'c' },
      verbose: { type: 'boolean', short: 'v' },
      'log-format': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    USAGE,
  );
  if (positionals.length > 0) throw new ExitError(2, `unexpected argument ${positionals[0]}\n${USAGE}`);
  const logFormat = stringFlag(values['log-format']) ?? 'json';
  if (logFormat !== 'json' && logFormat !== 'text') throw new ExitError(2, `--log-format must be json or text, not ${logFormat}`);
  return Object.freeze({
    stack: stringFlag(values.stack),
    resource: stringFlag(values.resource),
    accessKey: stringFlag(values['access-key']),
    secretKey: stringFlag(values['secret-key']),
    region: stringFlag(values.region),
    url: stringFlag(values.url),
    configSets: stringFlag(values.configsets),
    verbose: values.verbose === true,
    logFormat,
    help: values.help === true,
  });
}
