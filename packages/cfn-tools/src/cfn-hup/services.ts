// service.restarted: services that AWS::CloudFormation::Init says must be running (ensureRunning) and are
// not are started again, and their resource's service.restarted hooks fire (as the original does).
import { spawnSync } from 'node:child_process';

/** How cfn-hup asks about and starts a service; tests inject one. */
export interface ServiceManager {
  isRunning(name: string): boolean;
  /** Starts it; returns an error message, or undefined on success. */
  start(name: string): string | undefined;
}

function hasSystemctl(): boolean {
  return spawnSync('sh', ['-c', 'command -v systemctl'], { stdio: 'ignore' }).status === 0;
}

/** systemctl when present, else `service NAME status|start`. */
export function systemServiceManager(): ServiceManager {
  const systemd = hasSystemctl();
  const run = (verb: 'status' | 'start', name: string) =>
    systemd
      ? spawnSync('systemctl', [verb === 'status' ? 'is-active' : 'start', '--quiet', `${name}.service`], { encoding: 'utf8' })
      : spawnSync('service', [name, verb], { encoding: 'utf8' });
  return {
    isRunning: (name) => run('status', name).status === 0,
    start: (name) => {
      const result = run('start', name);
      return result.status === 0 ? undefined : `${result.error?.message ?? `exit ${result.status}`} ${result.stderr ?? ''}`.trim();
    },
  };
}

/** Names of the sysvinit/systemd services with ensureRunning true in every config of the resource's AWS::CloudFormation::Init. */
export function servicesToKeepRunning(metadata: unknown): string[] {
  const init = (metadata as Record<string, unknown> | null)?.['AWS::CloudFormation::Init'];
  if (init === null || typeof init !== 'object') return [];
  const names = new Set<string>();
  for (const [configName, config] of Object.entries(init as Record<string, unknown>)) {
    if (configName === 'configSets' || config === null || typeof config !== 'object') continue;
    const services = (config as { services?: Record<string, Record<string, { ensureRunning?: unknown }>> }).services ?? {};
    for (const kind of ['sysvinit', 'systemd']) {
      for (const [name, spec] of Object.entries(services[kind] ?? {})) {
        if (spec?.ensureRunning === true || spec?.ensureRunning === 'true') names.add(name);
      }
    }
  }
  return [...names].sort();
}
