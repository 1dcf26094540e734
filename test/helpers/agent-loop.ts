// The whole in-guest loop as real processes, for e2e tests and the round-trip benchmark:
// os-collect-config (hearth long-poll collector) -> os-refresh-config -> 20-os-apply-config
// (renders the deployments list) -> 55-heat-config -> hooks/<group> -> heat-config-notify, plus the
// outbox drainer (`heat-config-notify --drain --follow`). Every agent runs from its single-file
// bundle (scripts/bundle-agents.mjs), as an image ships it, under a private HEARTH_ROOT so nothing
// touches /etc or /var. Only 127.0.0.1 is contacted.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../..', import.meta.url).pathname;

let bundled: string | undefined;

/** Bundles the agents and hooks once per process into a temp dir; returns that dir. */
export function bundleAgents(): string {
  if (bundled) return bundled;
  const dir = mkdtempSync(join(tmpdir(), 'hearth-agents-'));
  const result = spawnSync(process.execPath, [join(ROOT, 'scripts/bundle-agents.mjs'), dir], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`bundling the agents failed: ${result.stderr}`);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  bundled = dir;
  return dir;
}

/** A running agent loop for one server. */
export interface AgentLoop {
  /** The private root every agent path lives under. */
  root: string;
  /** The agents' environment. */
  env: NodeJS.ProcessEnv;
  /** Lines the agents wrote to stderr (JSON logs), for failure messages. */
  log(): string;
  /** Starts (or restarts) the collector and the outbox drainer. */
  start(): void;
  /** Kills every agent process (collector, refresh, heat-config, hooks, drainer) at once. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Kills everything and removes the root. */
  close(): Promise<void>;
}

/** Writes an executable shell wrapper. */
function wrapper(path: string, body: string): void {
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
}

/**
 * Sets up an agent root for a server whose os-collect-config.conf (hearth-server's
 * `os_collect_config_conf`) is given, and returns the loop (not started).
 */
export function agentLoop(confText: string, options: { extraEnv?: Record<string, string> } = {}): AgentLoop {
  const bundle = bundleAgents();
  const root = mkdtempSync(join(tmpdir(), 'hearth-guest-'));
  const bin = join(root, 'bin');
  const base = join(root, 'os-refresh-config');
  mkdirSync(bin);
  mkdirSync(join(base, 'configure.d'), { recursive: true });
  const node = process.execPath;
  for (const name of ['os-collect-config', 'os-refresh-config', 'dib-run-parts', 'os-apply-config', 'heat-config', 'heat-config-notify']) {
    wrapper(join(bin, name), `exec "${node}" "${join(bundle, `${name}.mjs`)}" "$@"`);
  }
  // The two configure.d scripts heat-agents' elements install.
  wrapper(join(base, 'configure.d', '20-os-apply-config'), `exec os-apply-config -o "${join(root, 'fs')}"`);
  wrapper(join(base, 'configure.d', '55-heat-config'), 'exec heat-config');
  const conf = join(root, 'os-collect-config.conf');
  writeFileSync(conf, confText.replace('[DEFAULT]\n', '[DEFAULT]\npolling_interval = 5\n'), { mode: 0o600 });
  const env: NodeJS.ProcessEnv = {
    PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: root,
    LANG: 'C.UTF-8',
    no_proxy: '127.0.0.1',
    HEARTH_ROOT: join(root, 'fs'),
    OS_REFRESH_CONFIG_BASE_DIR: base,
    OS_CONFIG_APPLIER_TEMPLATES: join(ROOT, 'images/elements/hearth-agent/static/usr/libexec/os-apply-config/templates'),
    HEAT_CONFIG_HOOKS: join(bundle, 'hooks'),
    // The outbox retries fast in tests (the daemon's defaults back off up to 5 minutes).
    HEARTH_NOTIFY_RETRY_BASE_MS: '200',
    HEARTH_NOTIFY_RETRY_CAP_MS: '1000',
    ...options.extraEnv,
  };
  let children: ChildProcess[] = [];
  let stderr = '';
  const spawnAgent = (args: string[]) => {
    const child = spawn(args[0]!, args.slice(1), { env, cwd: root, detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-200_000);
    });
    children.push(child);
  };
  const kill = async (signal: NodeJS.Signals = 'SIGKILL') => {
    const running = children.filter((c) => c.exitCode === null && c.signalCode === null);
    for (const child of running) {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // already gone
      }
    }
    await Promise.all(
      running.map(
        (c) => new Promise((resolve) => (c.exitCode !== null || c.signalCode !== null ? resolve(null) : c.once('exit', resolve))),
      ),
    );
    children = [];
  };
  return {
    root,
    env,
    log: () => stderr,
    start() {
      spawnAgent([
        join(bin, 'os-collect-config'),
        '--config-file',
        conf,
        '--cachedir',
        join(root, 'fs/var/lib/os-collect-config'),
        '--backup-cachedir',
        join(root, 'fs/var/run/os-collect-config'),
      ]);
      spawnAgent([join(bin, 'heat-config-notify'), '--drain', '--follow']);
    },
    kill,
    async close() {
      await kill();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
