// `hearth-agent secret`: puts a credential into the agent's SecretStore, lists names, deletes one. The value is
// read from stdin, never from the command line (which every user can read in /proc), and is never printed.
import { parseArgs } from 'node:util';
import { ExitError } from './exit.ts';
import { openSecretStore, type SecretStore, type SecretStoreConfig } from './secret-store.ts';
import { SecretStoreError } from './secret-store-error.ts';

/** The usage text of `hearth-agent secret`. */
export const SECRET_COMMAND_HELP = `usage: hearth-agent secret [--backend file|keyring] [--path FILE] [--service NAME] COMMAND
       hearth-agent secret set NAME < FILE    store the value read from stdin (one trailing newline dropped)
       hearth-agent secret list               print the stored names, one per line (never values)
       hearth-agent secret delete NAME        remove a secret

The agents' secret store: --backend file (default) is a root-only 0600 JSON file, --path
(default /var/lib/hearth/credentials.json); --backend keyring is the Secret Service, --service
(default hearth-agent). Use the backend os-collect-config.conf names in [hearth] secret_store;
the hearth collector reads its secret as hearth/<access_key_id>; the cfn collector and the cfn tools (a credential
file without AWSSecretKey=) as cfn/<access_key_id>.

exit codes: 0 done; 1 the store could not be used (what to do is printed); 2 usage (bad flag, backend or name);
3 delete found no such secret.
`;

/** Where the command's input and output go (tests pass their own). */
export interface SecretCommandIo {
  /** Where the value is read from. Default process.stdin. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Where `list` and `--help` print. Default process.stdout. */
  stdout?: NodeJS.WritableStream;
  /** Where confirmations go. Default process.stderr. */
  stderr?: NodeJS.WritableStream;
  /** Environment the default file path comes from (HEARTH_ROOT, HEARTH_STATE_DIR). Default process.env. */
  env?: NodeJS.ProcessEnv;
}

/** A usage error: exit 2 with the hint to --help. */
function usage(message: string): ExitError {
  return new ExitError(2, `hearth-agent secret: ${message}\nTry 'hearth-agent secret --help'.`);
}

/** Reads all of `stream` as UTF-8 and drops one trailing newline (`echo VALUE |` adds it). */
async function readValue(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

/** Runs one subcommand against `store`; resolves to the exit code. */
async function run(store: SecretStore, command: string, names: string[], io: Required<SecretCommandIo>): Promise<number> {
  const arity = command === 'list' ? 0 : 1;
  if (names.length !== arity) throw usage(`${command} takes ${arity === 0 ? 'no argument' : 'one NAME'}, got ${names.length}`);
  const name = names[0]!;
  if (command === 'list') {
    const stored = await store.list();
    io.stdout.write(stored.map((entry) => `${entry}\n`).join(''));
    return 0;
  }
  if (command === 'delete') {
    if (await store.delete(name)) {
      io.stderr.write(`deleted secret ${JSON.stringify(name)} from ${store.location}\n`);
      return 0;
    }
    io.stderr.write(`hearth-agent secret: no secret ${JSON.stringify(name)} in ${store.location}\n`);
    return 3;
  }
  if (io.stdin.isTTY === true) {
    throw usage(`set reads the value from stdin, not from a terminal: hearth-agent secret set ${name} < FILE`);
  }
  const value = await readValue(io.stdin);
  if (value === '')
    throw new ExitError(
      1,
      `hearth-agent secret: set read an empty value from stdin; pipe the value in: hearth-agent secret set ${name} < FILE`,
    );
  await store.set(name, value);
  io.stderr.write(`stored secret ${JSON.stringify(name)} in ${store.location}\n`);
  return 0;
}

/** `hearth-agent secret ARGS...`: resolves to the exit code; a usage error is ExitError(2), a store error ExitError(1). */
export async function secretMain(argv: string[], io: SecretCommandIo = {}): Promise<number> {
  const streams: Required<SecretCommandIo> = {
    stdin: io.stdin ?? process.stdin,
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    env: io.env ?? process.env,
  };
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        backend: { type: 'string' },
        path: { type: 'string' },
        service: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw usage((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    streams.stdout.write(SECRET_COMMAND_HELP);
    return 0;
  }
  const [command, ...names] = positionals;
  if (command === undefined) throw usage('a command is needed: set, list or delete');
  if (!['set', 'list', 'delete'].includes(command)) throw usage(`unknown command ${JSON.stringify(command)}; use set, list or delete`);
  const config: SecretStoreConfig = {
    ...(values.backend !== undefined ? { backend: values.backend } : {}),
    ...(values.path !== undefined ? { path: values.path } : {}),
    ...(values.service !== undefined ? { service: values.service } : {}),
  };
  try {
    return await run(openSecretStore(config, streams.env), command, names, streams);
  } catch (error) {
    if (error instanceof SecretStoreError) {
      throw new ExitError(
        error.code === 'ERR_SECRET_CONFIG' || error.code === 'ERR_SECRET_NAME' ? 2 : 1,
        `hearth-agent secret: ${error.message}`,
      );
    }
    throw error;
  }
}
