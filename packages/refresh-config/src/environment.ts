// dib-run-parts sources every file of `<dir>/../environment.d` into the shell that then runs the
// scripts, with `set -eu -o pipefail` and xtrace on. We do the same in one bash and read back the
// environment (and working directory) it ends with, so the scripts see exactly what they would.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { ChildTracker } from './child-processes.ts';

/** What the scripts of one directory run with after the environment files. */
export interface SourcedEnvironment {
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** How sourcing ended when a file failed. */
export interface SourcingFailure {
  exitCode: number;
}

// $1 is the prefix of the "Sourcing" lines (empty: no such lines); the rest are the files. The environment goes out on fd 3
// so that what the files print on stdout/stderr reaches ours, as it would under dib-run-parts.
const SOURCE_SCRIPT = `set -ue -o pipefail
prefix=$1; shift
for env_file in "$@"; do
  [ -z "$prefix" ] || printf '%s %s Sourcing environment file %s\\n' "$prefix" "$(date)" "$env_file" >&2
  set -o xtrace
  source "$env_file"
  set +o xtrace
done
printf '%s\\0' "$PWD" >&3
env -0 >&3`;

/** Splits bash's `$PWD\\0` + `env -0` output; drops what bash itself adds (`_`, SHLVL) in favour of `base`. */
export function parseSourcedOutput(output: string, base: NodeJS.ProcessEnv): SourcedEnvironment {
  const [cwd = process.cwd(), ...pairs] = output.split('\0').filter((part) => part !== '');
  const env: NodeJS.ProcessEnv = {};
  for (const pair of pairs) {
    const equals = pair.indexOf('=');
    if (equals > 0) env[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  delete env._;
  if (base.SHLVL === undefined) delete env.SHLVL;
  else env.SHLVL = base.SHLVL;
  return { env, cwd };
}

/** Sources `files` (in order) in bash over `env`, printing dib-run-parts' "Sourcing" line before each when `announcePrefix` is set; resolves the resulting environment, or the failing exit status. */
export function sourceEnvironment(
  files: string[],
  env: NodeJS.ProcessEnv,
  options: { announcePrefix?: string; tracker?: ChildTracker } = {},
): Promise<SourcedEnvironment | SourcingFailure> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', SOURCE_SCRIPT, 'dib-run-parts', options.announcePrefix ?? '', ...files], {
      env,
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    });
    if (child.pid !== undefined) options.tracker?.add(child.pid);
    const chunks: Buffer[] = [];
    child.stdio[3]?.on('data', (chunk: Buffer) => chunks.push(chunk));
    child.once('error', (error) => {
      process.stderr.write(`dib-run-parts: cannot start bash to source ${files.join(' ')}: ${error.message}\n`);
      resolve({ exitCode: 127 });
    });
    child.once('close', (code, signal) => {
      if (child.pid !== undefined) options.tracker?.forget(child.pid);
      if (code === 0) resolve(parseSourcedOutput(Buffer.concat(chunks).toString('utf8'), env));
      else resolve({ exitCode: signal === null ? (code ?? 1) : 128 + (constants.signals[signal] ?? 0) });
    });
  });
}
