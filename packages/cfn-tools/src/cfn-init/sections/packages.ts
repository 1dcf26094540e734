// packages: {manager: {name: version | [versions] | []}}. Each package already installed (at the
// asked version when one is given) is left alone; the rest are installed with the manager's own
// version syntax. Managers run in a fixed order (rpm first, as AWS does, then apt, yum, dnf,
// python, rubygems); an unknown manager is an error.
import { commandFailed, isObject, StepError, type SectionContext } from '../context.ts';

/** The managers cfn-init knows, in the order they run. */
export const PACKAGE_MANAGERS = ['rpm', 'apt', 'yum', 'dnf', 'python', 'rubygems'] as const;

type Manager = (typeof PACKAGE_MANAGERS)[number];

interface Wanted {
  name: string;
  /** The version asked for, or undefined for any (AWS: `[]` or `""`). */
  version: string | undefined;
}

function wantedPackages(manager: string, entries: unknown): Wanted[] {
  if (!isObject(entries))
    throw new StepError('packages', manager, null, `must be an object of {package: version}, not ${JSON.stringify(entries)}`);
  return Object.entries(entries).map(([name, spec]) => {
    const versions = Array.isArray(spec) ? (spec as unknown[]) : spec === undefined || spec === null || spec === '' ? [] : [spec];
    if (versions.some((version) => typeof version !== 'string' && typeof version !== 'number')) {
      throw new StepError(
        'packages',
        `${manager}.${name}`,
        null,
        `version must be a string or a list of strings, not ${JSON.stringify(spec)}`,
      );
    }
    // Several versions can only be installed side by side by rubygems; elsewhere the last one wins.
    const version = versions.length === 0 ? undefined : String(versions[versions.length - 1]);
    return { name, version: version === '' ? undefined : version };
  });
}

const APT_ENV = { DEBIAN_FRONTEND: 'noninteractive' };

/** The command that says whether `wanted` is installed (exit 0), per manager. */
function installedCheck(manager: Manager, wanted: Wanted): string[] {
  const { name, version } = wanted;
  switch (manager) {
    case 'apt':
      return ['dpkg-query', '-W', '-f', '${Status} ${Version}\\n', name];
    case 'rpm':
    case 'yum':
    case 'dnf':
      return ['rpm', '-q', version === undefined ? name : `${name}-${version}`];
    case 'python':
      return ['python3', '-m', 'pip', 'show', name];
    case 'rubygems':
      return ['gem', 'list', '-i', name, ...(version === undefined ? [] : ['-v', version])];
  }
}

/** The install command for the packages not yet installed. */
function installCommand(manager: Manager, missing: Wanted[], yumOrDnf: string): string[][] {
  const pinned = (separator: string) =>
    missing.map(({ name, version }) => (version === undefined ? name : `${name}${separator}${version}`));
  switch (manager) {
    case 'apt':
      return [['apt-get', 'install', '-y', ...pinned('=')]];
    case 'yum':
      return [[yumOrDnf, '-y', 'install', ...pinned('-')]];
    case 'dnf':
      return [['dnf', '-y', 'install', ...pinned('-')]];
    case 'rpm':
      // AWS: the value is the URL or path of the rpm file.
      return [['rpm', '-U', '--replacepkgs', ...missing.map(({ name, version }) => version ?? name)]];
    case 'python':
      return [['python3', '-m', 'pip', 'install', ...pinned('==')]];
    case 'rubygems':
      return missing.map(({ name, version }) => ['gem', 'install', '-b', ...(version === undefined ? [] : ['--version', version]), name]);
  }
}

async function isInstalled(ctx: SectionContext, manager: Manager, wanted: Wanted): Promise<boolean> {
  // For rpm the version is a URL or path, not something rpm -q can look for.
  const check = installedCheck(manager, manager === 'rpm' ? { name: wanted.name, version: undefined } : wanted);
  const result = await ctx.runner.run(check);
  if (result.exitCode !== 0) return false;
  if (manager === 'apt') {
    const [want, ok, state, version] = result.stdout.trim().split(/\s+/);
    if (`${want} ${ok} ${state}` !== 'install ok installed') return false;
    return wanted.version === undefined || version === wanted.version;
  }
  if (manager === 'python' && wanted.version !== undefined)
    return new RegExp(`^Version: ${wanted.version.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm').test(result.stdout);
  return true;
}

/** Installs what `packages` lists and is missing; records `<manager>:<name>` of each package installed. */
export async function applyPackages(ctx: SectionContext, packages: unknown): Promise<void> {
  if (packages === undefined) return;
  if (!isObject(packages))
    throw new StepError('packages', '(section)', null, `must be an object of {manager: {...}}, not ${JSON.stringify(packages)}`);
  const unknown = Object.keys(packages).filter((manager) => !(PACKAGE_MANAGERS as readonly string[]).includes(manager));
  if (unknown.length > 0)
    throw new StepError('packages', unknown[0]!, null, `unknown package manager (known: ${PACKAGE_MANAGERS.join(', ')})`);
  for (const manager of PACKAGE_MANAGERS) {
    if (!(manager in packages)) continue;
    const wanted = wantedPackages(manager, packages[manager]);
    const missing: Wanted[] = [];
    for (const item of wanted) {
      if (await isInstalled(ctx, manager, item))
        ctx.log.info('package already installed', { section: 'packages', manager, package: item.name, version: item.version });
      else missing.push(item);
    }
    if (missing.length === 0) continue;
    const yumOrDnf = ctx.which('yum') ? 'yum' : 'dnf';
    for (const command of installCommand(manager, missing, yumOrDnf)) {
      const result = await ctx.runner.run(command, manager === 'apt' ? { env: APT_ENV } : {});
      if (result.exitCode !== 0)
        throw new StepError(
          'packages',
          `${manager}: ${missing.map((item) => item.name).join(' ')}`,
          result.exitCode,
          commandFailed(result),
        );
      ctx.log.info('packages installed', { section: 'packages', manager, command: result.command });
    }
    for (const item of missing) ctx.changes.packages.add(`${manager}:${item.name}`);
  }
}
