import type { ClientOptions, HearthClient } from '@hearth/client';
import type { Command } from 'commander';
import type { CliIo } from './io.ts';
import { globalOptionsOrThrow, requireToken, type GlobalFlags, type GlobalOptions } from './options.ts';
import { createOutput, type Output } from './output.ts';

/** What the commands are built on: the process's IO and a client factory (both replaceable in tests). */
export interface CliDeps {
  io: CliIo;
  createClient(options: ClientOptions): HearthClient;
}

/** One command run: resolved global options, its output, and a client made on first use. */
export interface Session {
  readonly options: GlobalOptions;
  readonly out: Output;
  readonly io: CliIo;
  /** The API client; throws a usage ExitError when no admin token is set. */
  client(): HearthClient;
}

/** Opens the session of a command: resolves the global flags (from any level) against the environment. */
export function openSession(command: Command, deps: CliDeps): Session {
  const options = globalOptionsOrThrow(command.optsWithGlobals<GlobalFlags>(), deps.io.env);
  const out = createOutput(options.json, deps.io.stdout, deps.io.stderr);
  let client: HearthClient | undefined;
  return {
    options,
    out,
    io: deps.io,
    client() {
      client ??= deps.createClient({ url: options.url, token: requireToken(options), project: options.project });
      return client;
    },
  };
}
