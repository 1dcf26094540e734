// The whole loop as real processes on loopback: hearth-server, then in the "VM" os-collect-config
// (hearth collector) -> os-refresh-config -> os-apply-config -> heat-config -> the script hook ->
// heat-config-notify (outbox + drainer), all from their bundles (test/helpers/agent-loop.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { agentLoop, bundleAgents, type AgentLoop } from '../helpers/agent-loop.ts';
import { childEnv, freePort, removeServerData, spawnServer, type ServerProcess, operatorCall } from '../helpers/server.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let server: ServerProcess;
let dataDir: string;
let port: number;

function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return operatorCall<T>(server, method, path, body);
}

interface Deployment {
  id: string;
  status: string;
  status_reason: string | null;
  output_values: Record<string, unknown> | null;
}

async function waitFor(id: string, timeoutMs: number, loop: AgentLoop): Promise<Deployment> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { software_deployment: d } = await api<{ software_deployment: Deployment }>(
      'GET',
      `/v1/default/software_deployments/${id}?wait=5`,
    );
    if (d.status !== 'IN_PROGRESS') return d;
    if (Date.now() > until)
      throw new Error(`deployment ${id} still IN_PROGRESS after ${timeoutMs} ms; agent log tail:\n${loop.log().slice(-4000)}`);
  }
}

async function registerServer(name: string): Promise<{ id: string; conf: string }> {
  const created = await api<{ server: { id: string }; os_collect_config_conf: string }>('POST', '/v1/default/servers', { name });
  return { id: created.server.id, conf: created.os_collect_config_conf };
}

async function scriptConfig(script: string, outputs: Array<{ name: string; error_output?: boolean }> = []): Promise<string> {
  const { software_config: c } = await api<{ software_config: { id: string } }>('POST', '/v1/default/software_configs', {
    group: 'script',
    config: script,
    outputs,
  });
  return c.id;
}

async function signalCount(id: string): Promise<number> {
  const { timeline } = await api<{ timeline: Array<{ type: string }> }>('GET', `/v1/default/software_deployments/${id}/timeline`);
  // A signal that settles a deployment writes one deployment.completed or deployment.failed event.
  return timeline.filter((e) => e.type === 'deployment.completed' || e.type === 'deployment.failed').length;
}

before(async () => {
  bundleAgents();
  dataDir = mkdtempSync(join(tmpdir(), 'hearth-loop-'));
  port = await freePort();
  server = await spawnServer(dataDir, port);
});

after(async () => {
  server.child.kill('SIGKILL');
  await server.exited;
  await removeServerData(dataDir);
});

test('a deployment created with the CLI completes with its outputs; a failing script gives FAILED with its stderr', async () => {
  const vm = await registerServer('vm-cli');
  const loop = agentLoop(vm.conf);
  loop.start();
  try {
    const config = await scriptConfig('#!/bin/sh\necho "hello $name"\necho -n "$name-result" > "$heat_outputs_path.result"\n', [
      { name: 'result' },
    ]);
    const cli = spawnSync(
      process.execPath,
      [
        join(ROOT, 'packages/cli/bin/hearth.js'),
        'deployment',
        'create',
        '--config',
        config,
        '--server',
        vm.id,
        '--input',
        'name=web',
        '--json',
      ],
      { env: childEnv({ HEARTH_URL: server.url, HEARTH_TOKEN: server.token }), encoding: 'utf8' },
    );
    assert.equal(cli.status, 0, cli.stderr);
    const id = (JSON.parse(cli.stdout) as { software_deployment: { id: string } }).software_deployment.id;
    const done = await waitFor(id, 60_000, loop);
    assert.equal(done.status, 'COMPLETE', done.status_reason ?? '');
    assert.equal(done.output_values?.result, 'web-result');
    assert.equal(done.output_values?.deploy_stdout, 'hello web\n');

    const failing = await scriptConfig('#!/bin/sh\necho "disk full" >&2\nexit 3\n');
    const { software_deployment: f } = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
      config_id: failing,
      server_id: vm.id,
    });
    const failed = await waitFor(f.id, 60_000, loop);
    assert.equal(failed.status, 'FAILED');
    assert.equal(failed.output_values?.deploy_stderr, 'disk full\n');
    assert.equal(failed.output_values?.deploy_status_code, 3);
    assert.equal(await signalCount(f.id), 1);
  } finally {
    await loop.close();
  }
});

test('the server stopped while the hook runs still receives the signal after it restarts', async () => {
  const vm = await registerServer('vm-restart');
  const loop = agentLoop(vm.conf);
  loop.start();
  try {
    const config = await scriptConfig('#!/bin/sh\necho started > "$heat_outputs_path.started"\nsleep 3\necho finished\n');
    const { software_deployment: d } = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
      config_id: config,
      server_id: vm.id,
      timeout: 600,
    });
    // Wait until the agent fetched it (the hook is running), then take the server away.
    const until = Date.now() + 60_000;
    while (
      (await api<{ timeline: Array<{ type: string }> }>('GET', `/v1/default/software_deployments/${d.id}/timeline`)).timeline.every(
        (e) => e.type !== 'deployment.fetched',
      )
    ) {
      if (Date.now() > until) throw new Error(`never fetched; agent log:\n${loop.log().slice(-3000)}`);
      await sleep(100);
    }
    server.child.kill('SIGKILL');
    await server.exited;
    // The hook finishes and notify fails to deliver: the signal waits in the outbox (however long a
    // loaded machine takes to get there; the server must not be back before).
    const outbox = join(loop.root, 'fs/var/lib/hearth/outbox');
    const queued = () => existsSync(outbox) && readdirSync(outbox).some((name) => !name.startsWith('.') && name.endsWith('.json'));
    for (const until = Date.now() + 60_000; !queued(); await sleep(100)) {
      if (Date.now() > until) throw new Error(`the signal never reached the outbox; agent log:\n${loop.log().slice(-3000)}`);
    }
    server = await spawnServer(dataDir, port);
    const done = await waitFor(d.id, 60_000, loop);
    assert.equal(done.status, 'COMPLETE', done.status_reason ?? '');
    assert.equal(done.output_values?.deploy_stdout, 'finished\n');
    assert.equal(await signalCount(d.id), 1);
  } finally {
    await loop.close();
  }
});

test('the agent killed in the middle of a hook recovers and signals once', async () => {
  const vm = await registerServer('vm-kill');
  const loop = agentLoop(vm.conf);
  loop.start();
  try {
    const counter = join(loop.root, 'runs');
    const config = await scriptConfig(`#!/bin/sh\necho run >> "${counter}"\nsleep 2\necho ok\n`);
    const { software_deployment: d } = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
      config_id: config,
      server_id: vm.id,
    });
    const until = Date.now() + 60_000;
    const runs = () => {
      try {
        return readFileSync(counter, 'utf8').split('\n').filter(Boolean).length;
      } catch {
        return 0;
      }
    };
    while (runs() === 0) {
      if (Date.now() > until) throw new Error(`the hook never started; agent log:\n${loop.log().slice(-3000)}`);
      await sleep(50);
    }
    await loop.kill('SIGKILL'); // the VM's agents die mid-hook
    loop.start();
    const done = await waitFor(d.id, 60_000, loop);
    assert.equal(done.status, 'COMPLETE', done.status_reason ?? '');
    assert.equal(runs(), 2, 'the interrupted hook ran again once');
    await sleep(1500); // nothing more arrives later
    assert.equal(await signalCount(d.id), 1);
  } finally {
    await loop.close();
  }
});

for (const transport of ['CFN_SIGNAL', 'TEMP_URL_SIGNAL', 'HEAT_SIGNAL'] as const) {
  test(`the same loop with the ${transport} transport`, async () => {
    const vm = await registerServer(`vm-${transport.toLowerCase()}`);
    const loop = agentLoop(vm.conf);
    loop.start();
    try {
      const config = await scriptConfig('#!/bin/sh\necho -n 42 > "$heat_outputs_path.answer"\n', [{ name: 'answer' }]);
      const { software_deployment: d } = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
        config_id: config,
        server_id: vm.id,
        signal_transport: transport,
      });
      const done = await waitFor(d.id, 60_000, loop);
      assert.equal(done.status, 'COMPLETE', done.status_reason ?? '');
      assert.equal(done.output_values?.answer, '42');
    } finally {
      await loop.close();
    }
  });
}
