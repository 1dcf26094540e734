// Applies an AWS::CloudFormation::Init object: the selected configs in order, each one's sections
// in AWS's documented order (packages, groups, users, sources, files, commands, services; the
// original ran sources before groups and users).
import { selectConfigs } from './config-sets.ts';
import { emptyChanges, isObject, StepError, type SectionContext } from './context.ts';
import { applyCommands } from './sections/commands.ts';
import { applyFiles } from './sections/files.ts';
import { applyGroups } from './sections/groups.ts';
import { applyPackages } from './sections/packages.ts';
import { applyServices } from './sections/services.ts';
import { applySources } from './sections/sources.ts';
import { applyUsers } from './sections/users.ts';

/** The sections, in the order they run within one config. */
export const SECTION_ORDER = ['packages', 'groups', 'users', 'sources', 'files', 'commands', 'services'] as const;

/** What applyInit did. */
export interface ApplyResult {
  /** The config keys run, in order. */
  configs: string[];
  /** True when a command's waitAfterCompletion "forever" stopped the run early. */
  stopped: boolean;
}

/**
 * Runs `init` (the value of AWS::CloudFormation::Init) for the configSets asked for (`-c`, comma
 * list; undefined for the default). Throws ConfigSetError or StepError (section, key, exit code).
 */
export async function applyInit(
  ctx: Omit<SectionContext, 'changes'>,
  init: Record<string, unknown>,
  configSets: string | undefined,
): Promise<ApplyResult> {
  const configs = selectConfigs(init, configSets);
  const section: SectionContext = { ...ctx, changes: emptyChanges() };
  for (const [index, name] of configs.entries()) {
    const config = init[name];
    if (!isObject(config)) {
      throw new StepError(
        'config',
        name,
        null,
        config === undefined ? `no config named ${name} in the metadata` : `must be an object, not ${JSON.stringify(config)}`,
      );
    }
    const unknown = Object.keys(config).filter((key) => !(SECTION_ORDER as readonly string[]).includes(key));
    if (unknown.length > 0) ctx.log.warn('unknown sections ignored', { config: name, sections: unknown });
    ctx.log.info('config started', { config: name });
    await applyPackages(section, config.packages);
    await applyGroups(section, config.groups);
    await applyUsers(section, config.users);
    await applySources(section, config.sources);
    await applyFiles(section, config.files);
    const { stop } = await applyCommands(section, config.commands);
    if (stop) return { configs: configs.slice(0, index + 1), stopped: true };
    await applyServices(section, config.services);
    ctx.log.info('config done', { config: name });
  }
  return { configs, stopped: false };
}
