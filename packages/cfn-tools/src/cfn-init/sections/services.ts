// services: {sysvinit | systemd: {name: {enabled, ensureRunning, files, sources, packages, commands}}}.
// enabled switches start at boot on or off; ensureRunning starts or stops the service; a running
// service with ensureRunning true is restarted when any file, source, package or command it
// lists changed earlier in this run. systemctl when there is one, else service + chkconfig or
// update-rc.d (the original's fallbacks).
import { commandFailed, isObject, StepError, toBoolean, type SectionContext } from '../context.ts';

/** The service managers cfn-init accepts (both drive the same init system). */
export const SERVICE_MANAGERS = ['sysvinit', 'systemd'] as const;

type Action = 'enable' | 'disable' | 'start' | 'stop' | 'restart' | 'status';

const PAST: Record<Action, string> = {
  enable: 'enabled',
  disable: 'disabled',
  start: 'started',
  stop: 'stopped',
  restart: 'restarted',
  status: 'checked',
};

/** The command for `action` on `service`, given which tools this machine has. */
export function serviceCommand(which: (name: string) => boolean, service: string, action: Action): string[] {
  if (which('systemctl'))
    return action === 'status' ? ['systemctl', 'is-active', '--quiet', `${service}.service`] : ['systemctl', action, `${service}.service`];
  if (action === 'enable' || action === 'disable') {
    return which('chkconfig') ? ['chkconfig', service, action === 'enable' ? 'on' : 'off'] : ['update-rc.d', service, action];
  }
  return ['service', service, action];
}

function listed(name: string, key: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
    throw new StepError('services', name, null, `${key} must be a list of names, not ${JSON.stringify(value)}`);
  }
  return value as string[];
}

/** What the service lists that changed in this run, for the log; empty when nothing did. */
function changedTriggers(ctx: SectionContext, name: string, properties: Record<string, unknown>): string[] {
  const changed = [
    ...listed(name, 'files', properties.files).filter((path) => ctx.changes.files.has(path)),
    ...listed(name, 'sources', properties.sources).filter((dir) => ctx.changes.sources.has(dir)),
    ...listed(name, 'commands', properties.commands).filter((command) => ctx.changes.commands.has(command)),
  ];
  if (properties.packages !== undefined) {
    if (!isObject(properties.packages))
      throw new StepError('services', name, null, `packages must be {manager: [names]}, not ${JSON.stringify(properties.packages)}`);
    for (const [manager, names] of Object.entries(properties.packages)) {
      changed.push(
        ...listed(name, `packages.${manager}`, names)
          .filter((pkg) => ctx.changes.packages.has(`${manager}:${pkg}`))
          .map((pkg) => `${manager}:${pkg}`),
      );
    }
  }
  return changed;
}

async function act(ctx: SectionContext, name: string, action: Action): Promise<void> {
  const result = await ctx.runner.run(serviceCommand(ctx.which, name, action));
  if (result.exitCode !== 0) throw new StepError('services', name, result.exitCode, commandFailed(result));
  ctx.log.info(`service ${PAST[action]}`, { section: 'services', service: name, command: result.command });
}

async function applyService(ctx: SectionContext, name: string, properties: Record<string, unknown>): Promise<void> {
  const triggers = changedTriggers(ctx, name, properties);
  if (properties.enabled !== undefined) await act(ctx, name, toBoolean(properties.enabled) ? 'enable' : 'disable');
  if (properties.ensureRunning === undefined) return;
  const running = (await ctx.runner.run(serviceCommand(ctx.which, name, 'status'))).exitCode === 0;
  if (toBoolean(properties.ensureRunning)) {
    if (!running) await act(ctx, name, 'start');
    else if (triggers.length > 0) {
      ctx.log.info('restarting: what it depends on changed', { section: 'services', service: name, changed: triggers });
      await act(ctx, name, 'restart');
    } else ctx.log.info('service already running', { section: 'services', service: name });
  } else if (running) await act(ctx, name, 'stop');
}

/** Enables, starts, stops and restarts the services listed. */
export async function applyServices(ctx: SectionContext, services: unknown): Promise<void> {
  if (services === undefined) return;
  if (!isObject(services))
    throw new StepError('services', '(section)', null, `must be an object of {sysvinit|systemd: {...}}, not ${JSON.stringify(services)}`);
  for (const [manager, entries] of Object.entries(services)) {
    if (!(SERVICE_MANAGERS as readonly string[]).includes(manager))
      throw new StepError('services', manager, null, `unknown service manager (known: ${SERVICE_MANAGERS.join(', ')})`);
    if (!isObject(entries))
      throw new StepError('services', manager, null, `must be an object of {service: {...}}, not ${JSON.stringify(entries)}`);
    for (const [name, properties] of Object.entries(entries)) {
      if (!isObject(properties)) throw new StepError('services', name, null, `must be an object, not ${JSON.stringify(properties)}`);
      await applyService(ctx, name, properties);
    }
  }
}
