// The agent pipeline on loopback when one of its processes is SIGKILLed on its own (the OOM killer, kill -9, a
// crash), as systemd leaves things with Restart=: the hearth-server and os-collect-config go on, the killed
// heat-config is started again by the next poll, and the hook it started (the leader of its own process group)
// outlives it. The deployment must still end COMPLETE with one signal, and the hook must never run twice at once.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentLoop, bundleAgents } from '../helpers/agent-loop.ts';
import { freePort, removeServerData, spawnServer, type ServerProcess, operatorCall } from '../helpers/server.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: ServerProcess;
let dataDir: string;

function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return operatorCall<T>(server, method, path, body);
}

/** The pids whose command line holds `needle` (the bundle dir is this process's own temp dir). */
function pidsRunning(needle: string): number[] {
  const cmdline = (pid: string): string => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      return ''; // ended while we looked
    }
  };
  return readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid) && cmdline(pid).includes(needle))
    .map(Number);
}

/** SIGKILLs the process group `pid` is in (the hook's), ignoring one that is gone: cleanup must go on. */
function killGroupOf(pid: number): void {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    process.kill(-Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]), 'SIGKILL');
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

before(async () => {
  bundleAgents();
  dataDir = mkdtempSync(join(tmpdir(), 'hearth-crash-'));
  server = await spawnServer(dataDir, await freePort());
});

after(async () => {
  server.child.kill('SIGKILL');
  await server.exited;
  await removeServerData(dataDir);
});

test('heat-config SIGKILLed on its own mid-hook: the leftover hook is stopped, the hook runs again alone, one signal', async () => {
  const bundle = bundleAgents();
  const created = await api<{ server: { id: string }; os_collect_config_conf: string }>('POST', '/v1/default/servers', {
    name: 'vm-crash',
  });
  const loop = agentLoop(created.os_collect_config_conf);
  const runs = join(loop.root, 'runs');
  const lines = () => {
    try {
      return readFileSync(runs, 'utf8').split('\n').filter(Boolean);
    } catch {
      return [];
    }
  };
  let leftover: number | undefined;
  loop.start();
  try {
    const { software_config: config } = await api<{ software_config: { id: string } }>('POST', '/v1/default/software_configs', {
      group: 'script',
      config: `#!/bin/sh\necho "start $$" >> "${runs}"\n[ -e "${runs}.fast" ] || sleep 60\necho "end $$" >> "${runs}"\necho done\n`,
      outputs: [],
    });
    const { software_deployment: d } = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
      config_id: config.id,
      server_id: created.server.id,
      timeout: 600,
    });
    for (let i = 0; lines().length === 0; i++) {
      if (i > 600) throw new Error(`the hook never started; agent log:\n${loop.log().slice(-3000)}`);
      await sleep(50);
    }
    await sleep(200); // heat-config records its hook right after spawning it
    leftover = Number(lines()[0]!.split(' ')[1]);
    const heatConfig = pidsRunning(`${bundle}/heat-config.mjs`);
    assert.equal(heatConfig.length, 1);
    process.kill(heatConfig[0]!, 'SIGKILL');
    writeFileSync(`${runs}.fast`, '');
    // os-collect-config sees the command fail and runs it again on its next poll.
    let status = 'IN_PROGRESS';
    for (let i = 0; status === 'IN_PROGRESS'; i++) {
      if (i > 60) throw new Error(`still IN_PROGRESS; agent log:\n${loop.log().slice(-4000)}`);
      const { software_deployment: now } = await api<{ software_deployment: { status: string } }>(
        'GET',
        `/v1/default/software_deployments/${d.id}?wait=5`,
      );
      status = now.status;
    }
    assert.equal(status, 'COMPLETE');
    await sleep(1000); // nothing more arrives later
    const { timeline } = await api<{ timeline: Array<{ type: string }> }>('GET', `/v1/default/software_deployments/${d.id}/timeline`);
    assert.equal(timeline.filter((e) => e.type === 'deployment.completed' || e.type === 'deployment.failed').length, 1);
    assert.ok(!alive(leftover), 'the hook the killed heat-config left behind was stopped');
    const [first, second, third, ...rest] = lines();
    assert.equal(first, `start ${leftover}`);
    assert.match(second ?? '', /^start \d+$/);
    assert.equal(third, second?.replace('start', 'end'), `the first run never ended, the second ran alone: ${lines().join(' | ')}`);
    assert.deepEqual(rest, []);
  } finally {
    // The script's $$ is below the hook's dispatcher, in the group the hook leads.
    if (leftover !== undefined) killGroupOf(leftover);
    await loop.close();
  }
});
