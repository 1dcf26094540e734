import { writeFileAtomic } from '@hearth/agent-kit/atomic-file';
import { pyJsonDumps } from '@hearth/agent-kit/python-json';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CREDENTIAL_INPUTS,
  clearOutputs,
  collectOutputs,
  describeValue,
  ensureDir,
  failedResult,
  hookDirs,
  hookPath,
  hookResult,
  inputEnv,
  outputsBase,
  runHook,
  runTool,
  statusCode,
  toolCommand,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: puppet < deployment.json

heat-config hook for group "puppet": writes the config (a manifest) to <working>/<id>.pp (0700) and runs
in <working>:
  CMD apply --color false --detailed-exitcodes --logdest console [--modulepath M] [--tags T]
      [--debug --logdest /var/log/puppet/heat-debug.log] [--verbose --logdest /var/log/puppet/heat-verbose.log] <id>.pp
with facts as env vars: FACTER_fqdn (hostname -f), FACTER_<input> for every input (strings as they are,
other values as JSON; an input no env var can hold fails the deployment unrun), FACTER_heat_outputs_path=<outputs>/<id>,
and FACTER_deploy_config_name with hiera.
stdout/stderr are also kept in <logdir>/<creation_time, ':' and 'T' as '-'>-<id>-stdout.log / -stderr.log.
Declared outputs are read from <outputs>/<id>.<name>.
Prints {deploy_stdout, deploy_stderr, deploy_status_code (0 when puppet exits 0 or 2, else its code), <outputs>...}.

options:
  enable_hiera | use_hiera     write every input to <hiera datadir>/heat_config_<name>.json (default false)
  enable_facter | use_facter   pass inputs as FACTER_<input> (default true)
  modulepath, tags             --modulepath / --tags (a list of tags is joined with commas)
  enable_debug, enable_verbose --debug / --verbose with their log files (default false)
  expose_credentials           also pass deploy_password and deploy_signal_id (default false)
Boolean options accept true/false and Heat's words (yes/no, on/off, 1/0).

env:
  HEAT_PUPPET_WORKING        default /var/lib/heat-config/heat-config-puppet
  HEAT_PUPPET_OUTPUTS        default /var/run/heat-config/heat-config-puppet
  HEAT_PUPPET_CMD            default puppet
  HEAT_PUPPET_LOGDIR         default /var/run/heat-config/deployed
  HEAT_PUPPET_HIERA_DATADIR  default /etc/puppet/hieradata
`;

const TRUE_WORDS = new Set(['true', 't', 'yes', 'y', 'on', '1']);
const FALSE_WORDS = new Set(['false', 'f', 'no', 'n', 'off', '0']);

/** The first of `names` set in `options`, as a boolean (booleans, numbers and Heat's words); `fallback` when none is. */
function optionFlag(options: Record<string, unknown>, names: string[], fallback: boolean): boolean {
  for (const name of names) {
    const value = options[name];
    if (typeof value === 'boolean') return value;
    if (typeof value === 'number') return value !== 0;
    if (typeof value === 'string') {
      const word = value.trim().toLowerCase();
      if (TRUE_WORDS.has(word)) return true;
      if (FALSE_WORDS.has(word)) return false;
    }
  }
  return fallback;
}

/** An option as command-line text: strings as they are, lists joined with commas, other scalars as JSON; absent or '' is undefined. */
function optionText(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '' || value === false) return undefined;
  if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' ? item : JSON.stringify(item))).join(',') || undefined;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A fixed path of the original, under HEARTH_ROOT when that is set. */
function rooted(path: string, env: NodeJS.ProcessEnv): string {
  return env.HEARTH_ROOT ? join(env.HEARTH_ROOT, path) : path;
}

/** The puppet argv: the original's, flags inserted before the manifest in the same order. */
function puppetArgs(manifest: string, options: Record<string, unknown>, env: NodeJS.ProcessEnv): string[] {
  const args = ['apply', '--color', 'false', '--detailed-exitcodes', '--logdest', 'console'];
  const modulePath = optionText(options.modulepath);
  const tags = optionText(options.tags);
  if (modulePath !== undefined) args.push('--modulepath', modulePath);
  if (tags !== undefined) args.push('--tags', tags);
  if (optionFlag(options, ['enable_debug'], false)) args.push('--debug', '--logdest', rooted('/var/log/puppet/heat-debug.log', env));
  if (optionFlag(options, ['enable_verbose'], false)) args.push('--verbose', '--logdest', rooted('/var/log/puppet/heat-verbose.log', env));
  return [...args, manifest];
}

/** `hostname -f`, trimmed; undefined (and a warning) when it fails. */
async function hostnameF(context: HookContext): Promise<string | undefined> {
  const result = await runTool('hostname', ['-f'], { log: context.log });
  const name = result.stdout.trim();
  if (result.exitCode === 0 && name !== '') return name;
  context.log.warn("could not get 'hostname -f': FACTER_fqdn not set", { stderr: result.stderr.trim() });
  return undefined;
}

/** The log-file prefix: <logdir>/<creation time with ':' and 'T' as '-'>-<id> (now, when the deployment has no creation time). */
function logBase(logDir: string, creationTime: string, id: string): string {
  const time = creationTime === '' ? new Date().toISOString().replace(/\.\d+Z$/, 'Z') : creationTime;
  return join(logDir, `${time.replace(/[:T]/g, '-')}-${id}`);
}

/** Writes the manifest (and hiera data), runs puppet apply with the inputs as facts, and reports its outcome. */
async function runPuppet(context: HookContext): Promise<HookResult> {
  const { deployment, log, env } = context;
  const config = deployment.config ?? '';
  if (typeof config !== 'string') return failedResult(`puppet hook: config must be the text of a manifest (got ${describeValue(config)})`);
  const dirs = hookDirs('puppet', env);
  ensureDir(dirs.outputs);
  ensureDir(dirs.working);
  const options = deployment.options;
  const useHiera = optionFlag(options, ['enable_hiera', 'use_hiera'], false);
  const useFacter = optionFlag(options, ['enable_facter', 'use_facter'], true);
  const exposeCredentials = optionFlag(options, ['expose_credentials'], false);

  const facts: Record<string, string> = {};
  const fqdn = await hostnameF(context);
  if (fqdn !== undefined) facts.FACTER_fqdn = fqdn;
  if (useFacter) {
    const inputs = inputEnv(deployment, { includeCredentials: exposeCredentials });
    // As in the script hook: puppet applied without one of its facts could do harm, and Heat's hook failed too.
    if (inputs.skipped.length > 0)
      return failedResult(`puppet hook: puppet was not run: ${inputs.skipped.join('; ')}; no fact can hold that: change the input`);
    for (const [name, value] of Object.entries(inputs.env)) facts[`FACTER_${name}`] = value;
  }
  if (useHiera) {
    if (!/^[A-Za-z0-9._-]+$/.test(deployment.name) || deployment.name === '.' || deployment.name === '..') {
      return failedResult(
        `puppet hook: with enable_hiera the deployment name becomes a file name; ${describeValue(deployment.name)} cannot be one`,
      );
    }
    // A Map keeps the inputs' order (a key like "1" included), and json.dumps' text keeps a Float input a Float.
    const hiera = new Map<string, unknown>();
    for (const input of deployment.inputs) if (exposeCredentials || !CREDENTIAL_INPUTS.has(input.name)) hiera.set(input.name, input.value);
    const datadir = ensureDir(hookPath('HEAT_PUPPET_HIERA_DATADIR', '/etc/puppet/hieradata', env));
    await writeFileAtomic(join(datadir, `heat_config_${deployment.name}.json`), pyJsonDumps(hiera), { mode: 0o600 });
    facts.FACTER_deploy_config_name = deployment.name;
  }
  const base = outputsBase(dirs.outputs, deployment);
  facts.FACTER_heat_outputs_path = base;

  const manifest = join(dirs.working, `${deployment.id}.pp`);
  await writeFileAtomic(manifest, config, { mode: 0o700 });
  clearOutputs(base, deployment);
  const args = puppetArgs(manifest, options, env);
  if (args.includes('--debug') || args.includes('--verbose')) ensureDir(rooted('/var/log/puppet', env));

  const logDir = ensureDir(hookPath('HEAT_PUPPET_LOGDIR', '/var/run/heat-config/deployed', env));
  const logs = logBase(logDir, deployment.creationTime, deployment.id);
  const result = await runTool(toolCommand('HEAT_PUPPET_CMD', 'puppet', env), args, { cwd: dirs.working, env: facts, log });
  writeFileSync(`${logs}-stdout.log`, result.stdout, { mode: 0o600 });
  writeFileSync(`${logs}-stderr.log`, result.stderr, { mode: 0o600 });
  // --detailed-exitcodes: 2 means "changes were applied", a success.
  const status = result.exitCode === 2 ? 0 : statusCode(result);
  return hookResult({ ...result, status }, collectOutputs(base, deployment));
}

runHook({ group: 'puppet', usage: USAGE, run: runPuppet });
