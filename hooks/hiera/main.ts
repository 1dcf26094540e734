import { writeFileAtomic } from '@hearth/agent-kit/atomic-file';
import { dirname, join } from 'node:path';
import {
  describeValue,
  ensureDir,
  failedResult,
  hookPath,
  hookResult,
  isObject,
  pythonJson,
  runHook,
  runTool,
  stringify,
  toolCommand,
  type HookContext,
  type HookResult,
} from '../_lib/index.ts';

const USAGE = `usage: hiera < deployment.json

heat-config hook for group "hiera": the config is {hierarchy: [...], datafiles: {name: data}}. Writes
hiera.yaml (json backend, :datadir: the hiera datadir, one line per hierarchy item) and each datafile as
<datadir>/<name>.json (sorted keys, indent 4), all 0600. First runs the legacy check command: when it
prints anything but "empty", hieradata from the old os-apply-config element is still there, and the
deployment fails with status 1 and nothing written.
Prints {deploy_stdout: "", deploy_stderr: "", deploy_status_code: 0}.

env:
  HEAT_PUPPET_HIERA_DATADIR     default /etc/puppet/hieradata
  HEAT_HIERA_CONFIG             default /etc/puppet/hiera.yaml
  HEAT_HIERA_ELEMENT_CHECK_CMD  default "os-apply-config --key hiera.datafiles --type raw --key-default empty"
`;

const DEFAULT_CHECK = 'os-apply-config --key hiera.datafiles --type raw --key-default empty';

/** hiera.yaml as the original writes it: the json backend over `datadir`, then one line per hierarchy item. */
function hieraConfig(datadir: string, hierarchy: unknown[]): string {
  const items = hierarchy.map((item) => `  - ${stringify(item)}\n`).join('');
  return `\n---\n:backends:\n  - json\n:json:\n  :datadir: ${datadir}\n:hierarchy:\n${items}`;
}

/** A failed result when hieradata of the legacy os-apply-config element is still there; undefined when there is none. */
async function legacyHieraCheck({ log, env }: HookContext): Promise<HookResult | undefined> {
  const [command, ...args] = toolCommand('HEAT_HIERA_ELEMENT_CHECK_CMD', DEFAULT_CHECK, env)
    .split(' ')
    .filter((word) => word !== '');
  if (command === undefined) return undefined;
  const check = await runTool(command, args, { log });
  if (check.exitCode === null && check.signal === null) {
    log.info('legacy hiera check not available, assuming no legacy data', { command });
    return undefined;
  }
  if (check.exitCode !== 0) {
    log.warn('legacy hiera check failed, assuming no legacy data', {
      command: check.command,
      exitCode: check.exitCode,
      stderr: check.stderr,
    });
    return undefined;
  }
  const found = check.stdout.trimEnd();
  if (found === 'empty') return undefined;
  const message =
    `Legacy hieradata from os-apply-config has been detected - ${found}. ` +
    'Please update all of your interfaces to use the new heat-agents hiera hook before proceeding';
  log.error('legacy hieradata detected');
  return hookResult({ stdout: check.stdout, stderr: message, status: 1 });
}

/** Writes hiera.yaml and the datafiles of the deployment's config. */
async function runHiera(context: HookContext): Promise<HookResult> {
  const { deployment, env } = context;
  const config = deployment.config;
  if (!isObject(config)) return failedResult(`hiera hook: config must be an object {hierarchy, datafiles} (got ${describeValue(config)})`);
  const hierarchy = config.hierarchy === undefined || Array.isArray(config.hierarchy) ? config.hierarchy : [config.hierarchy];
  const datafiles = config.datafiles;
  if (datafiles !== undefined && !isObject(datafiles)) {
    return failedResult(`hiera hook: config.datafiles must map names to data (got ${describeValue(datafiles)})`);
  }
  for (const name of Object.keys(datafiles ?? {})) {
    if (name.includes('\0') || name.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')) {
      return failedResult(`hiera hook: datafile name ${describeValue(name)} cannot be a file name`);
    }
  }
  const legacy = await legacyHieraCheck(context);
  if (legacy !== undefined) return legacy;

  const datadir = ensureDir(hookPath('HEAT_PUPPET_HIERA_DATADIR', '/etc/puppet/hieradata', env));
  if (hierarchy !== undefined) {
    const configPath = hookPath('HEAT_HIERA_CONFIG', '/etc/puppet/hiera.yaml', env);
    ensureDir(dirname(configPath));
    await writeFileAtomic(configPath, hieraConfig(datadir, hierarchy), { mode: 0o600 });
  }
  for (const [name, data] of Object.entries(datafiles ?? {})) {
    await writeFileAtomic(join(datadir, `${name}.json`), pythonJson(data, { sortKeys: true }), { mode: 0o600 });
  }
  return hookResult({ stdout: '', stderr: '', status: 0 });
}

runHook({ group: 'hiera', usage: USAGE, run: runHiera });
