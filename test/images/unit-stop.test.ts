// Stopping os-collect-config.service while a deployment runs: the real collector -> os-refresh-config ->
// 55-heat-config -> heat-config -> script hook chain (the bundle, in a scratch HEARTH_ROOT), signalled the way systemd
// signals the unit under its KillMode= (systemd.kill(5)). No systemd runs here, so its cgroup is stood for by an
// environment token every process of the unit inherits.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

const ROOT = new URL('../..', import.meta.url).pathname;
const UNIT = join(ROOT, 'images/systemd/os-collect-config.service');
let dir = '';
let bundle = '';
const started: ChildProcess[] = [];
/** Every pid the test saw in the unit, killed in `after` whatever happened. */
const seen = new Set<number>();

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'hearth-unit-stop-'));
  const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build-agent.mjs'), '--out', join(dir, 'dist'), '--no-sea'], {
    encoding: 'utf8',
  });
  assert.equal(built.status, 0, built.stderr);
  bundle = join(dir, 'dist/hearth-agent.cjs');
});
after(() => {
  for (const pid of seen) signal(pid, 'SIGKILL');
  for (const child of started) if (child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // already gone
  }
}

/** The live processes whose environment holds `token`: the unit's cgroup, as far as this test can see it. */
function unitProcesses(token: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(token);
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** A setting of the unit's [Service] section, or `fallback` (systemd's default). */
function unitSetting(text: string, key: string, fallback: string): string {
  return new RegExp(`^${key}=(.*)$`, 'm').exec(text)?.[1]?.trim() ?? fallback;
}

async function waitFor(what: string, check: () => boolean, timeoutMs: number): Promise<void> {
  for (let waited = 0; waited < timeoutMs; waited += 100) {
    if (check()) return;
    await sleep(100);
  }
  assert.fail(`timed out waiting for ${what}`);
}

/**
 * `systemctl stop` as systemd.kill(5) describes it: SIGTERM to every process of the cgroup (control-group) or to the
 * main process only (mixed, process); once the main process is gone, mixed SIGKILLs what is left at once; whatever
 * still runs after TimeoutStopSec= is SIGKILLed. Resolves when the unit has no process left.
 */
async function systemdStop(unitText: string, main: ChildProcess, token: string): Promise<void> {
  const killMode = unitSetting(unitText, 'KillMode', 'control-group');
  const stopTimeoutMs = Math.min(Number(unitSetting(unitText, 'TimeoutStopSec', '90')) * 1000, 40_000);
  const mainGone = () => main.exitCode !== null || main.signalCode !== null;
  const killAll = (name: NodeJS.Signals) => {
    for (const pid of unitProcesses(token)) signal(pid, name);
  };
  if (killMode === 'control-group') killAll('SIGTERM');
  else if (killMode !== 'none') signal(main.pid!, 'SIGTERM');
  for (let waited = 0; waited < stopTimeoutMs && unitProcesses(token).length > 0; waited += 100) {
    if (killMode === 'mixed' && mainGone()) break;
    await sleep(100);
  }
  killAll('SIGKILL');
  await waitFor('the unit to have no process left', () => unitProcesses(token).length === 0, 10_000);
}

test('stopping os-collect-config.service lets the running deployment handle SIGTERM instead of being SIGKILLed', async () => {
  const root = join(dir, 'root');
  // The baked tree: command links and hook launchers pointing at the bundle, 55-heat-config from the element.
  const installed = spawnSync(bundle, ['install', '--root', root, '--agent', bundle], { encoding: 'utf8' });
  assert.equal(installed.status, 0, installed.stderr);
  const configureDir = 'usr/libexec/os-refresh-config/configure.d';
  mkdirSync(join(root, configureDir), { recursive: true });
  cpSync(join(ROOT, 'images/elements/hearth-agent/static', configureDir, '55-heat-config'), join(root, configureDir, '55-heat-config'));
  mkdirSync(join(root, 'etc'), { recursive: true });
  writeFileSync(join(root, 'etc/os-collect-config.conf'), '[DEFAULT]\ncollectors = local\ncommand = os-refresh-config\n', { mode: 0o600 });
  mkdirSync(join(root, 'var/lib/os-collect-config/local-data'), { recursive: true });
  writeFileSync(join(root, 'var/lib/os-collect-config/local-data/site.json'), '{"changed": 1}\n');
  // The deployment: says it started, records a SIGTERM and exits; bounded at 30 s. Its output goes to /dev/null: the
  // hook process dies at the same SIGTERM, and the shell's "Terminated" (for its sleep) into that closed pipe would
  // end it by SIGPIPE before its trap runs (a hook matter, not the unit's).
  const startedMarker = join(dir, 'deployment-started');
  const termMarker = join(dir, 'deployment-got-sigterm');
  const script = [
    '#!/bin/sh',
    'exec >/dev/null 2>&1',
    `trap 'echo term > ${termMarker}; exit 143' TERM`,
    `echo started > ${startedMarker}`,
    'i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done',
    '',
  ].join('\n');
  mkdirSync(join(root, 'var/run/heat-config'), { recursive: true });
  writeFileSync(
    join(root, 'var/run/heat-config/heat-config'),
    JSON.stringify([{ id: 'd1', name: 'd1', group: 'script', config: script, inputs: [], outputs: [], options: {} }]),
  );

  const unitId = randomBytes(8).toString('hex');
  const token = `HEARTH_TEST_UNIT=${unitId}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HEARTH_ROOT: root,
    HEARTH_TEST_UNIT: unitId,
    PATH: `${join(root, 'usr/bin')}:${process.env.PATH ?? ''}`,
  };
  delete env.NODE_EXTRA_CA_CERTS;
  let stderr = '';
  const collector = spawn(join(root, 'usr/bin/os-collect-config'), [], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  started.push(collector);
  collector.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  await waitFor('the deployment to start', () => existsSync(startedMarker), 30_000).catch((error: Error) => {
    throw new Error(`${error.message}\n${stderr}`);
  });
  const inUnit = unitProcesses(token);
  for (const pid of inUnit) seen.add(pid);
  // The emulated cgroup holds the whole chain down to the deployment's shell, or this test would prove nothing.
  const commands = inUnit.map((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
    } catch {
      return `(${pid} ended meanwhile)`; // a short-lived child of the chain, such as a heartbeat's
    }
  });
  assert.ok(
    commands.some((command) => command.includes('heat-config-script/d1')),
    `the deployment is in the unit: ${commands.join('; ')}`,
  );

  await systemdStop(readFileSync(UNIT, 'utf8'), collector, token);
  assert.equal(
    existsSync(termMarker),
    true,
    'the deployment was killed without a SIGTERM: the collector does not pass SIGTERM on, so the unit must signal its whole cgroup',
  );
});
