// dib-run-parts sources every file of `<dir>/../environment.d` into the shell that then runs the
// scripts, with `set -eu -o pipefail` and xtrace on. We do the same in one bash and read back the
// environment (and working directory) it ends with, so the scripts see exactly what they would.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
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

// $1 is where the environment goes, $2 the prefix of the "Sourcing" lines (empty: no such lines); the rest are the
// files. A file, not a pipe: stdout/stderr stay ours, as under dib-run-parts, and a daemon an environment file starts in
// the background (`eval $(ssh-agent)`) holds no pipe of ours open, so nothing waits for it to end. Our variables have
// names an environment file will not set (`prefix=/usr` is common).
const SOURCE_SCRIPT = `set -ue -o pipefail
hearth_environment_out=$1; hearth_sourcing_prefix=$2; shift 2
for env_file in "$@"; do
  [ -z "$hearth_sourcing_prefix" ] || printf '%s %s Sourcing environment file %s\\n' "$hearth_sourcing_prefix" "$(date)" "$env_file" >&2
  set -o xtrace
  source "$env_file"
  set +o xtrace
done
{ printf '%s\\0' "$PWD"; env -0; } >"$hearth_environment_out"`;

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
  let scratch: string;
  try {
    // Private (0700): the environment may hold secrets.
    scratch = mkdtempSync(join(tmpdir(), 'hearth-refresh-env-'));
  } catch (error) {
    process.stderr.write(`dib-run-parts: cannot create a temp dir to source ${files.join(' ')}: ${(error as Error).message}\n`);
    return Promise.resolve({ exitCode: 1 });
  }
  const out = join(scratch, 'environment');
  return new Promise<SourcedEnvironment | SourcingFailure>((resolve) => {
    const child = spawn('bash', ['-c', SOURCE_SCRIPT, 'dib-run-parts', out, options.announcePrefix ?? '', ...files], {
      env,
      stdio: 'inherit',
    });
    if (child.pid !== undefined) options.tracker?.add(child.pid);
    child.once('error', (error) => {
      process.stderr.write(`dib-run-parts: cannot start bash to source ${files.join(' ')}: ${error.message}\n`);
      resolve({ exitCode: 127 });
    });
    child.once('exit', (code, signal) => {
      if (child.pid !== undefined) options.tracker?.forget(child.pid);
      if (code === 0) {
        try {
          resolve(parseSourcedOutput(readFileSync(out, 'utf8'), env));
        } catch (error) {
          process.stderr.write(`dib-run-parts: cannot read the environment sourced from ${files.join(' ')}: ${(error as Error).message}\n`);
          resolve({ exitCode: 1 });
        }
      } else resolve({ exitCode: signal === null ? (code ?? 1) : 128 + (constants.signals[signal] ?? 0) });
    });
  }).finally(() => rmSync(scratch, { recursive: true, force: true }));
}
