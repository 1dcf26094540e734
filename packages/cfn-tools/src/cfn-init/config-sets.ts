// Which config keys to run, in order: `config` when there are no configSets, else the selected
// sets (`-c a,b`, default `default`) flattened, following `{"ConfigSet": "<name>"}` references
// to other sets (the original's expansion of those crashes on Python 3).
import { isObject } from './context.ts';

/** Thrown when the configSets cannot give a list of configs to run; the message says which set or key and why. */
export class ConfigSetError extends Error {
  override readonly name = 'ConfigSetError';
}

/**
 * The config keys to run for `init` (the AWS::CloudFormation::Init object) and the sets asked for
 * (`-c` value, comma-separated; undefined when not given).
 */
export function selectConfigs(init: Record<string, unknown>, requested: string | undefined): string[] {
  const configSets = init.configSets;
  const names =
    requested === undefined
      ? []
      : requested
          .split(',')
          .map((name) => name.trim())
          .filter((name) => name !== '');
  // null and {} count as no configSets, as the original's `if not self.configsets`: the `config` key runs.
  if (configSets === undefined || configSets === null || (isObject(configSets) && Object.keys(configSets).length === 0)) {
    if (names.length > 0) throw new ConfigSetError(`configSets ${names.join(', ')} requested, but the metadata has no configSets`);
    return ['config'];
  }
  if (!isObject(configSets)) throw new ConfigSetError(`configSets must be an object of lists, not ${JSON.stringify(configSets)}`);
  if (names.length === 0) {
    if (!('default' in configSets))
      throw new ConfigSetError(`no configSet named default (have: ${Object.keys(configSets).join(', ')}); pass -c NAME`);
    names.push('default');
  }
  const out: string[] = [];
  for (const name of names) {
    if (!(name in configSets))
      throw new ConfigSetError(`configSet ${name} requested but not in configSets (have: ${Object.keys(configSets).join(', ')})`);
    expand(configSets, name, [], out);
  }
  if (out.length === 0) throw new ConfigSetError(`configSet ${names.join(',')} is empty`);
  return out;
}

function expand(configSets: Record<string, unknown>, name: string, trail: string[], out: string[]): void {
  if (trail.includes(name)) throw new ConfigSetError(`configSet ${name} refers to itself: ${[...trail, name].join(' -> ')}`);
  const entries = configSets[name];
  const list = typeof entries === 'string' ? [entries] : entries;
  if (!Array.isArray(list)) throw new ConfigSetError(`configSet ${name} must be a list, not ${JSON.stringify(entries)}`);
  for (const entry of list as unknown[]) {
    if (typeof entry === 'string') {
      out.push(entry);
      continue;
    }
    const keys = isObject(entry) ? Object.keys(entry) : [];
    const reference = isObject(entry) ? entry.ConfigSet : undefined;
    if (keys.length !== 1 || typeof reference !== 'string') {
      throw new ConfigSetError(`configSet ${name}: entry ${JSON.stringify(entry)} is neither a config name nor {"ConfigSet": "<name>"}`);
    }
    if (!(reference in configSets)) throw new ConfigSetError(`configSet ${name} refers to undefined configSet ${reference}`);
    expand(configSets, reference, [...trail, name], out);
  }
}
