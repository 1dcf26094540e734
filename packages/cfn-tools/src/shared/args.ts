// Flag parsing shared by the commands: node:util parseArgs, with a usage error as ExitError(2).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ExitError } from '@hearth/agent-kit/exit';

/** The option table parseArgs takes. */
export type FlagSpec = NonNullable<ParseArgsConfig['options']>;

/** Parses `argv` strictly against `options`; an unknown flag or a missing value is ExitError(2) with `usage`. */
export function parseFlags<T extends FlagSpec>(argv: string[], options: T, usage: string) {
  try {
    return parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch (error) {
    throw new ExitError(2, `${(error as Error).message}\n${usage}`);
  }
}

/** Whether `--help`/`-h` was asked for (checked before parsing so that it works with other flags missing). */
export function wantsHelp(argv: string[]): boolean {
  return argv.includes('--help');
}

/** A flag value as a string (parseArgs gives string | boolean | array). */
export function stringFlag(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
