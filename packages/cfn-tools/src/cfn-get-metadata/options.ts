// cfn-get-metadata's command line: the original's flags; `--url` is honoured (the original ignored it).
import { ExitError } from '@hearth/agent-kit/exit';
import { parseFlags, stringFlag } from '../shared/args.ts';

/** The usage text. */
export const CFN_GET_METADATA_USAGE = `usage: cfn-get-metadata -s STACK -r RESOURCE [--access-key KEY --secret-key SECRET | --credential-file FILE]
                        [--region REGION] [-u URL] [-k KEY] [--insecure]
Prints a stack resource's metadata (or the value at KEY, e.g. foo.'bar.1') and refreshes the last_metadata cache.`;

const FLAGS = {
  stack: { type: 'string', short: 's' },
  resource: { type: 'string', short: 'r' },
  'access-key': { type: 'string' },
  'secret-key': { type: 'string' },
  region: { type: 'string' },
  'credential-file': { type: 'string' },
  url: { type: 'string', short: 'u' },
  key: { type: 'string', short: 'k' },
  insecure: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** cfn-get-metadata's options after parsing. */
export interface CfnGetMetadataOptions {
  stack: string;
  resource: string;
  accessKey: string | undefined;
  secretKey: string | undefined;
  /** Accepted, unused (as in the original). */
  region: string | undefined;
  credentialFile: string | undefined;
  /** The CFN API base URL; default from /var/lib/heat-cfntools. */
  url: string | undefined;
  /** Dotted key to print instead of the whole document. */
  key: string | undefined;
  /** Skip TLS verification (beyond the original, whose -k is --key). */
  insecure: boolean;
  help: boolean;
}

/** Parses argv; a usage error is ExitError(2), an empty stack or resource ExitError(1) as in the original. */
export function parseCfnGetMetadataArgs(argv: string[]): Readonly<CfnGetMetadataOptions> {
  const { values, positionals } = parseFlags(argv, FLAGS, CFN_GET_METADATA_USAGE);
  const help = values.help === true;
  if (!help && positionals.length > 0) throw new ExitError(2, `unexpected argument '${positionals[0]}'\n${CFN_GET_METADATA_USAGE}`);
  const stack = stringFlag(values.stack);
  const resource = stringFlag(values.resource);
  if (!help && (stack === undefined || resource === undefined)) {
    throw new ExitError(
      2,
      `the following arguments are required: ${[stack === undefined && '-s/--stack', resource === undefined && '-r/--resource'].filter(Boolean).join(', ')}\n${CFN_GET_METADATA_USAGE}`,
    );
  }
  if (!help && stack === '') throw new ExitError(1, 'The Stack name must not be empty.');
  if (!help && resource === '') throw new ExitError(1, 'The Resource ID must not be empty');
  return Object.freeze({
    stack: stack ?? '',
    resource: resource ?? '',
    accessKey: stringFlag(values['access-key']),
    secretKey: stringFlag(values['secret-key']),
    region: stringFlag(values.region),
    credentialFile: stringFlag(values['credential-file']),
    url: stringFlag(values.url),
    key: stringFlag(values.key),
    insecure: values.insecure,
    help,
  });
}
