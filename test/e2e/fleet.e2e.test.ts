// A small fleet under churn, end to end: 20 servers, each with its own agent loop (test/helpers/agent-loop.ts),
// against one hearth-server process. The operator creates, updates (UPDATE, SUSPEND, RESUME, DELETE) and deletes
// deployments in bursts, with script hooks that succeed, fail, print MBs, sleep, heartbeat or run past their
// timeout; meanwhile the server is stopped (SIGTERM once, SIGKILL once) and started again on the same data and
// port, a few agents lose heat-config or heat-config-notify to kill -9 and get their loop restarted, and a server
// is deleted with deployments in flight. What is asserted does not depend on timing: every deployment settles as
// its last action's hook implies, with one result per action, each hook run alone (and once where no agent was
// killed), every outbox empty, every agent holding the server's document, no 5xx and no process left behind.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, closeSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentLoop, bundleAgents, type AgentLoop } from '../helpers/agent-loop.ts';
import { freePort, operatorCall, removeServerData, spawnServer } from '../helpers/server.ts';

const FLEET = 20;
/** The first HEARTBEAT servers get one heartbeating deployment each and nothing else, so no queue delays its hook. */
const HEARTBEAT = 2;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// A fixed seed: the same operations every run; only their timing against the agents varies.
let seed = 11;
const random = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32;
const pick = <T>(items: T[]): T => items[Math.floor(random() * items.length)]!;

let dataDir: string;
let logPath: string;
let port: number;
let server: ChildProcess | undefined;
const target = { url: '', token: 'test-admin-token' };

/** Starts hearth-server on the fixed data dir and port, its log (info: every reply's status) appended to logPath. */
async function startServer(): Promise<void> {
  const log = openSync(logPath, 'a');
  try {
    server = (await spawnServer(dataDir, port, target.token, { level: 'info', stderr: log })).child;
  } finally {
    closeSync(log);
  }
}

async function stopServer(signal: NodeJS.Signals): Promise<void> {
  const child = server;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill(signal);
  await exited;
}

function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  return operatorCall<T>(target, method, path, body);
}

type Kind = 'ok' | 'fail' | 'big' | 'sleep' | 'heartbeat' | 'timeout';
/** The body of each kind's script; every script first appends `start <tag> <pid>` to the server's runs file. */
const SCRIPTS: Record<Kind, string> = {
  ok: 'echo "ok $tag"',
  fail: 'echo "failing $tag" >&2\necho "end $tag $$" >> "$runs"\nexit $code',
  big: 'head -c 2000000 /dev/zero | tr "\\0" x\necho\necho "END $tag"',
  sleep: 'sleep 2\necho "slept $tag"',
  heartbeat: 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "step $i" >&3; sleep 1; done\necho "beat $tag"',
  timeout: 'sleep 25\necho "never $tag"',
};
/** Deployment timeouts: the heartbeating hook outlives its deadline unless heartbeats push it; `timeout` is killed. */
const TIMEOUTS: Record<Kind, number> = { ok: 120, fail: 120, big: 120, sleep: 120, heartbeat: 8, timeout: 3 };
const configIds = {} as Record<Kind, string>;

interface Action {
  tag: string;
  kind: Kind;
  code: number;
  action: string;
}
interface Deployment {
  id: string;
  vm: Vm;
  actions: Action[];
  deleted: boolean;
}
interface Vm {
  index: number;
  id: string;
  loop: AgentLoop;
  runs: string;
  deleted: boolean;
  /** Its agents were killed mid-run: an interrupted hook may run again (never at the same time). */
  crashed: boolean;
}
const vms: Vm[] = [];
const deployments: Deployment[] = [];
let tags = 0;

function newAction(kind: Kind, action: string): Action {
  tags += 1;
  return { tag: `t${tags}`, kind, code: kind === 'fail' ? 3 + (tags % 5) : 0, action };
}

async function create(vm: Vm, kind: Kind, timeout = TIMEOUTS[kind]): Promise<Deployment> {
  const action = newAction(kind, 'CREATE');
  const { software_deployment: d } = await api<{ software_deployment: { id: string } }>('POST', '/v1/default/software_deployments', {
    config_id: configIds[kind],
    server_id: vm.id,
    input_values: { tag: action.tag, code: String(action.code), runs: vm.runs },
    timeout,
  });
  const deployment = { id: d.id, vm, actions: [action], deleted: false };
  deployments.push(deployment);
  return deployment;
}

async function newActionOf(d: Deployment): Promise<void> {
  const action = newAction(pick<Kind>(['ok', 'fail', 'big', 'sleep', 'timeout']), pick(['UPDATE', 'SUSPEND', 'RESUME', 'DELETE']));
  await api('PUT', `/v1/default/software_deployments/${d.id}`, {
    config_id: configIds[action.kind],
    action: action.action,
    input_values: { tag: action.tag, code: String(action.code), runs: d.vm.runs },
    timeout: TIMEOUTS[action.kind],
  });
  d.actions.push(action);
}

/** The operator's churn over the deployments of the churned servers that are still there. */
async function burst(updateShare: number, deleteShare: number): Promise<void> {
  for (const d of deployments.filter((x) => !x.deleted && !x.vm.deleted && x.vm.index >= HEARTBEAT)) {
    const r = random();
    if (r < updateShare) await newActionOf(d);
    else if (r < updateShare + deleteShare) {
      await api('DELETE', `/v1/default/software_deployments/${d.id}`);
      d.deleted = true;
    }
  }
}

/** The processes of one agent root (its agents and hooks all carry its HEARTH_ROOT). */
function processesOf(root: string): Array<{ pid: number; command: string }> {
  const found: Array<{ pid: number; command: string }> = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`HEARTH_ROOT=${root}/fs\0`)) continue;
      found.push({ pid: Number(pid), command: readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ') });
    } catch {
      // ended while we looked
    }
  }
  return found;
}

function killAll(root: string): void {
  for (const { pid } of processesOf(root)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Kills the deleted server's hooks: nothing runs them to an end once its agent is gone. */
async function closeLoop(vm: Vm): Promise<void> {
  await vm.loop.kill('SIGKILL');
  killAll(vm.loop.root);
}

before(async () => {
  bundleAgents();
  dataDir = mkdtempSync(join(tmpdir(), 'hearth-fleet-'));
  logPath = join(dataDir, 'server.log');
  port = await freePort();
  target.url = `http://127.0.0.1:${port}`;
  await startServer();
});

after(async () => {
  for (const vm of vms) {
    await vm.loop.kill('SIGKILL');
    killAll(vm.loop.root);
    rmSync(vm.loop.root, { recursive: true, force: true });
  }
  await stopServer('SIGKILL');
  await removeServerData(dataDir);
});

test('a fleet under churn: every deployment settles once, as its hook implies', { timeout: 170_000 }, async () => {
  for (const kind of Object.keys(SCRIPTS) as Kind[]) {
    const { software_config: c } = await api<{ software_config: { id: string } }>('POST', '/v1/default/software_configs', {
      group: 'script',
      config: `#!/bin/sh\necho "start $tag $$" >> "$runs"\n${SCRIPTS[kind]}\necho "end $tag $$" >> "$runs"\nprintf %s "$tag" > "$heat_outputs_path.result"\n`,
      inputs: [{ name: 'tag' }, { name: 'code' }, { name: 'runs' }],
      outputs: [{ name: 'result' }],
      // The hook's own timeout: heartbeats push the server's deadline, not this one.
      options: kind === 'heartbeat' ? { timeout: 60 } : {},
    });
    configIds[kind] = c.id;
  }
  for (let index = 0; index < FLEET; index++) {
    const created = await api<{ server: { id: string }; os_collect_config_conf: string }>('POST', '/v1/default/servers', {
      name: `vm-${index}`,
    });
    const loop = agentLoop(created.os_collect_config_conf);
    vms.push({ index, id: created.server.id, loop, runs: join(loop.root, 'runs'), deleted: false, crashed: false });
  }
  for (const vm of vms) {
    vm.loop.start();
    await sleep(100); // not 20 node starts at once on 2 vCPUs
  }

  // Burst 1, then the server stops gracefully while hooks run and signals are on their way.
  for (const vm of vms.slice(0, HEARTBEAT)) await create(vm, 'heartbeat');
  for (const vm of vms.slice(HEARTBEAT)) {
    for (let k = 0; k < 2; k++) await create(vm, pick<Kind>(['ok', 'ok', 'fail', 'big', 'sleep', 'sleep', 'timeout']));
  }
  await sleep(2500);
  // The heartbeating hooks have begun heartbeating before the stop. Otherwise a hook that starts late (20 agents on
  // 2 vCPUs) can run its 12 s inside the outage (the restart itself takes 10 s under their load): every heartbeat
  // fails, the restart grace holds the passed deadline, and the result completes it with no heartbeat to show.
  for (const d of deployments.filter((x) => x.vm.index < HEARTBEAT)) {
    for (let waited = 0; ; waited += 250) {
      const { timeline } = await api<{ timeline: Array<{ type: string }> }>('GET', `/v1/default/software_deployments/${d.id}/timeline`);
      if (timeline.some((e) => e.type === 'deployment.heartbeat')) break;
      if (waited > 30_000) throw new Error(`no heartbeat of ${d.id} on vm-${d.vm.index} within 30 s; ${d.vm.loop.log().slice(-3000)}`);
      await sleep(250);
    }
  }
  await stopServer('SIGTERM');
  await startServer();

  // Burst 2: new actions, deletes, new deployments.
  await burst(0.5, 0.1);
  for (const vm of vms.slice(HEARTBEAT)) if (random() < 0.5) await create(vm, pick<Kind>(['ok', 'fail', 'big', 'sleep']));
  await sleep(1500);

  // kill -9 heat-config on three agents and heat-config-notify on two, then restart their loops.
  const crashed = vms.slice(HEARTBEAT, HEARTBEAT + 5);
  for (const [k, vm] of crashed.entries()) {
    vm.crashed = true;
    const name = k < 3 ? /heat-config\.mjs/ : /heat-config-notify\.mjs/;
    for (const { pid } of processesOf(vm.loop.root).filter((p) => name.test(p.command))) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // it ended between the listing and the kill (its run was over)
      }
    }
  }
  for (const vm of crashed) {
    await vm.loop.kill('SIGKILL');
    vm.loop.start();
  }

  // A server deleted while its deployments are in flight: they fail at once, naming the delete. Their
  // hooks sleep 25 s, and their deadlines are far off: on a loaded machine 3 s could pass before the delete.
  const doomed = vms.at(-1)!;
  const inFlight = [await create(doomed, 'timeout', 120), await create(doomed, 'timeout', 120)];
  await sleep(700);
  await api('DELETE', `/v1/default/servers/${doomed.id}`);
  doomed.deleted = true;
  for (const d of inFlight) {
    const { software_deployment: now } = await api<{ software_deployment: { status: string; status_reason: string } }>(
      'GET',
      `/v1/default/software_deployments/${d.id}`,
    );
    assert.equal(now.status, 'FAILED');
    assert.match(now.status_reason, new RegExp(`Its server ${doomed.id} \\(vm-${doomed.index}\\) was deleted`));
  }
  const { software_deployments: left } = await api<{ software_deployments: Array<{ status: string }> }>(
    'GET',
    `/v1/default/software_deployments?server_id=${doomed.id}`,
  );
  assert.deepEqual(
    left.filter((d) => d.status === 'IN_PROGRESS'),
    [],
  );
  await closeLoop(doomed);
  await sleep(1500);

  // The server is killed outright, then burst 3.
  await stopServer('SIGKILL');
  await startServer();
  await burst(0.35, 0.07);

  // Everything settles: nothing the agents could still signal stays IN_PROGRESS.
  for (let i = 0; ; i++) {
    const { software_deployments: all } = await api<{ software_deployments: Array<{ id: string; status: string }> }>(
      'GET',
      '/v1/default/software_deployments',
    );
    const pending = all.filter((d) => d.status === 'IN_PROGRESS');
    if (pending.length === 0) break;
    if (i > 90) throw new Error(`still IN_PROGRESS after 90 s: ${pending.map((d) => d.id).join(' ')}`);
    await sleep(1000);
  }
  // The drainers empty their outboxes and the collectors take the last documents.
  await sleep(3000);

  const alive = vms.filter((vm) => !vm.deleted);
  for (const vm of alive) {
    const logOf = () => `vm-${vm.index} agent log tail:\n${vm.loop.log().slice(-3000)}`;
    // Each hook run alone (a run that wrote its end saw no other start meanwhile), and once unless agents were killed.
    const lines = existsSync(vm.runs) ? readFileSync(vm.runs, 'utf8').split('\n').filter(Boolean) : [];
    const starts = new Map<string, number>();
    lines.forEach((line, at) => {
      const [word, tag, pid] = line.split(' ');
      if (word === 'start') starts.set(tag!, (starts.get(tag!) ?? 0) + 1);
      if (word !== 'end') return;
      const begun = lines.findLastIndex((l, k) => k < at && l === `start ${tag} ${pid}`);
      assert.ok(begun >= 0, `vm-${vm.index}: ${line} without its start`);
      assert.deepEqual(lines.slice(begun + 1, at), [], `vm-${vm.index}: hook ${tag} ran beside another: ${lines.join(' | ')}`);
    });
    if (!vm.crashed) {
      for (const [tag, count] of starts) assert.equal(count, 1, `vm-${vm.index}: the hook of ${tag} ran ${count} times`);
    }

    for (const d of deployments.filter((x) => x.vm === vm && !x.deleted)) {
      const last = d.actions.at(-1)!;
      assert.ok(starts.has(last.tag), `vm-${vm.index}: the last action (${last.tag}) of ${d.id} never ran; ${logOf()}`);
      const { software_deployment: now } = await api<{
        software_deployment: { status: string; status_reason: string; action: string; output_values: Record<string, unknown> | null };
      }>('GET', `/v1/default/software_deployments/${d.id}`);
      const outputs = now.output_values ?? {};
      const what = `${d.id} on vm-${vm.index}, ${last.action} ${last.kind} ${last.tag}: ${now.status} ${now.status_reason}`;
      assert.equal(now.action, last.action, what);
      assert.equal(now.status, last.kind === 'fail' || last.kind === 'timeout' ? 'FAILED' : 'COMPLETE', what);
      if (now.status === 'COMPLETE') assert.equal(outputs.result, last.tag, what);
      if (last.kind === 'fail') assert.equal(outputs.deploy_status_code, last.code, what);
      if (last.kind === 'big') assert.ok(String(outputs.deploy_stdout).endsWith(`END ${last.tag}\n`), what);

      // The timeline in actions: one result for the last, at most one for each earlier one.
      const { timeline } = await api<{ timeline: Array<{ time: string; type: string; message: string }> }>(
        'GET',
        `/v1/default/software_deployments/${d.id}/timeline`,
      );
      const perAction: string[][] = [];
      for (const e of timeline) {
        if (e.type === 'deployment.created' || (e.type === 'deployment.updated' && e.message.startsWith('New action'))) perAction.push([]);
        perAction.at(-1)?.push(e.type);
      }
      assert.equal(perAction.length, d.actions.length, what);
      perAction.forEach((types, k) => {
        const results = types.filter((t) => ['deployment.completed', 'deployment.failed', 'deployment.timed_out'].includes(t)).length;
        if (k === perAction.length - 1) assert.equal(results, 1, `${what}: ${types.join(',')}`);
        else assert.ok(results <= 1, `${what}: action ${k}: ${types.join(',')}`);
      });
      if (last.kind === 'heartbeat')
        assert.ok(
          timeline.some((e) => e.type === 'deployment.heartbeat'),
          [
            `${what}: no heartbeat in the timeline: ${timeline.map((e) => `${e.time} ${e.type} ${e.message}`).join(' | ')}`,
            `its agent's log of heartbeats:`,
            ...vm.loop
              .log()
              .split('\n')
              .filter((line) => /heartbeat/i.test(line)),
            `hearth-server's log of it:`,
            ...readFileSync(logPath, 'utf8')
              .split('\n')
              .filter((line) => line.includes(d.id)),
          ].join('\n'),
        );
    }

    // A signal an agent logged as acknowledged has its result in the store.
    const acknowledged = new Map<string, number>();
    for (const line of vm.loop.log().split('\n')) {
      if (!line.includes('"signal delivered"')) continue;
      const reply = JSON.parse(String((JSON.parse(line) as { reply: string }).reply)) as { deployment_id: string; duplicate?: boolean };
      if (!reply.duplicate) acknowledged.set(reply.deployment_id, (acknowledged.get(reply.deployment_id) ?? 0) + 1);
    }
    for (const [id, count] of acknowledged) {
      if (deployments.find((x) => x.id === id)?.deleted !== false) continue;
      const { timeline } = await api<{ timeline: Array<{ type: string; data?: { idempotency_key?: string } }> }>(
        'GET',
        `/v1/default/software_deployments/${id}/timeline`,
      );
      const signalled = timeline.filter((e) => ['deployment.completed', 'deployment.failed'].includes(e.type) && e.data?.idempotency_key);
      assert.ok(signalled.length >= count, `vm-${vm.index}: ${count} signal(s) of ${id} acknowledged, ${signalled.length} in the store`);
    }

    const outbox = join(vm.loop.root, 'fs/var/lib/hearth/outbox');
    assert.deepEqual(existsSync(outbox) ? readdirSync(outbox).filter((f) => !f.startsWith('.')) : [], [], `vm-${vm.index}; ${logOf()}`);

    const { metadata } = await api<{ metadata: unknown }>('GET', `/v1/default/software_deployments/metadata/${vm.id}`);
    const cache = join(vm.loop.root, 'fs/var/lib/os-collect-config/hearth.json');
    assert.ok(existsSync(cache), `vm-${vm.index} never collected`);
    assert.deepEqual((JSON.parse(readFileSync(cache, 'utf8')) as { deployments: unknown }).deployments, metadata, `vm-${vm.index}`);

    // Settled: only the collector and the drainer are left running.
    const running = processesOf(vm.loop.root).filter((p) => !/os-collect-config\.mjs|heat-config-notify\.mjs --drain/.test(p.command));
    assert.deepEqual(running, [], `vm-${vm.index}`);
  }

  // No 5xx but the 503s of a server shutting down, and no error logged.
  const serverLog = readFileSync(logPath, 'utf8').split('\n').filter(Boolean);
  assert.ok(
    serverLog.some((l) => l.includes('"statusCode":200')),
    'the log shows replies',
  );
  const bad = serverLog.filter((l) => /"statusCode":5(?!03)\d\d/.test(l) || /"level":(50|60)/.test(l));
  assert.deepEqual(bad, []);

  for (const vm of vms) {
    // A deployment the server already failed at its deadline may still be fetched and run late by its
    // agent (as in Heat): such a hook runs in a process group of its own and outlives its SIGKILLed
    // parent, so it is waited for (bounded); what is left after the kill is then the agents' leak.
    const agentsOnly = () =>
      processesOf(vm.loop.root).every((p) => /os-collect-config\.mjs|heat-config-notify\.mjs --drain/.test(p.command));
    for (let i = 0; i < 400 && !agentsOnly(); i++) await sleep(100);
    await vm.loop.kill('SIGKILL');
    assert.deepEqual(processesOf(vm.loop.root), [], `vm-${vm.index}: processes left behind`);
  }
});
