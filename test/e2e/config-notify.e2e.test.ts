// heat-config-notify (the bin, as a process) against a real hearth-server on 127.0.0.1: for each
// signal transport a deployment is created through the native API, its derived config read from
// the metadata endpoint and fed to heat-config-notify, and the deployment ends COMPLETE or FAILED
// with its outputs. Then the server is killed before delivery: the signal stays in the outbox,
// survives the agent's drain being killed too, and reaches the server once it is back.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@hearth/agent-kit';
import { deploymentInfo, Outbox, queueSignal } from '@hearth/config-notify';
import { childEnv, freePort, removeServerData, spawnServer, startServer } from '../helpers/server.ts';

const BIN = new URL('../../packages/config-notify/bin/heat-config-notify.js', import.meta.url).pathname;

interface Endpoint {
  url: string;
  token: string;
}

async function call(server: Endpoint, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${server.url}/v1/default${path}`, {
    method,
    headers: { 'x-auth-token': server.token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

interface Deployment {
  id: string;
  status: string;
  status_reason: string | null;
  output_values: Record<string, unknown> | null;
}

/** A server, a script config with a `result` output, and a deployment over `transport`; returns its id and derived config. */
async function deploy(server: Endpoint, transport: string, name: string): Promise<{ id: string; derived: Record<string, unknown> }> {
  const vm = (await call(server, 'POST', '/servers', { name, software_config_transport: 'HEARTH_LONG_POLL' })) as {
    server: { id: string };
  };
  const config = (
    await call(server, 'POST', '/software_configs', { name, group: 'script', config: '#!/bin/sh\necho hi', outputs: [{ name: 'result' }] })
  ).software_config as { id: string };
  const deployment = (
    await call(server, 'POST', '/software_deployments', { config_id: config.id, server_id: vm.server.id, signal_transport: transport })
  ).software_deployment as Deployment;
  const metadata = (await call(server, 'GET', `/software_deployments/metadata/${vm.server.id}`)).metadata as Array<Record<string, unknown>>;
  assert.equal(metadata.length, 1);
  return { id: deployment.id, derived: metadata[0]! };
}

async function deploymentOf(server: Endpoint, id: string): Promise<Deployment> {
  return (await call(server, 'GET', `/software_deployments/${id}`)).software_deployment as Deployment;
}

interface NotifyRun {
  code: number | null;
  stderr: string;
}

/** Runs the bin; not spawnSync, since an in-process server must keep answering. */
function runNotify(args: string[], env: NodeJS.ProcessEnv, stdin: string | Buffer = ''): { child: ChildProcess; done: Promise<NotifyRun> } {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(stdin);
  const done = new Promise<NotifyRun>((resolve) => child.once('close', (code) => resolve({ code, stderr })));
  return { child, done };
}

function workdir(): { root: string; env: NodeJS.ProcessEnv; outbox: string; write(name: string, value: unknown): string } {
  const root = mkdtempSync(join(tmpdir(), 'hearth-notify-e2e-'));
  const outbox = join(root, 'outbox');
  return {
    root,
    outbox,
    env: childEnv({ HEARTH_OUTBOX_DIR: outbox, HEARTH_NOTIFY_RETRY_BASE_MS: '200', HEARTH_NOTIFY_RETRY_CAP_MS: '1000' }),
    write(name, value) {
      const path = join(root, name);
      writeFileSync(path, JSON.stringify(value, null, 2), { mode: 0o600 });
      return path;
    },
  };
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const TRANSPORTS = ['HEARTH_SIGNAL', 'CFN_SIGNAL', 'TEMP_URL_SIGNAL', 'HEAT_SIGNAL'] as const;

test(
  'every transport: COMPLETE with outputs, FAILED with stderr, a repeated signal is a no-op, a 5 MB non-UTF-8 stdout signals',
  { timeout: 120_000 },
  async () => {
    const server = await startServer();
    const work = workdir();
    try {
      for (const transport of TRANSPORTS) {
        const ok = await deploy(server, transport, `ok-${transport}`);
        const okFile = work.write(`${transport}-ok.json`, ok.derived);
        const signal = JSON.stringify({
          deploy_stdout: 'hi\n',
          deploy_stderr: '',
          deploy_status_code: 0,
          result: `done over ${transport}`,
        });
        const first = await runNotify([okFile], work.env, signal).done;
        assert.equal(first.code, 0, `${transport}: ${first.stderr}`);
        const completed = await deploymentOf(server, ok.id);
        assert.equal(completed.status, 'COMPLETE', `${transport}: ${completed.status_reason}`);
        assert.equal(completed.output_values?.result, `done over ${transport}`);
        assert.equal(completed.output_values?.deploy_stdout, 'hi\n');

        // The same signal again (heat-config re-run, or a retry whose reply was lost): acknowledged, changes nothing.
        const again = await runNotify([okFile], work.env, signal).done;
        assert.equal(again.code, 0, `${transport} repeated: ${again.stderr}`);
        assert.deepEqual(await deploymentOf(server, ok.id), completed);

        const bad = await deploy(server, transport, `bad-${transport}`);
        const badFile = work.write(`${transport}-bad.json`, bad.derived);
        const failed = await runNotify(
          [badFile],
          work.env,
          JSON.stringify({ deploy_stdout: '', deploy_stderr: 'no such file', deploy_status_code: 2 }),
        ).done;
        assert.equal(failed.code, 0, `${transport}: ${failed.stderr}`);
        const failedDeployment = await deploymentOf(server, bad.id);
        assert.equal(failedDeployment.status, 'FAILED');
        assert.match(failedDeployment.status_reason ?? '', /status code: 2/);
        assert.equal(failedDeployment.output_values?.deploy_stderr, 'no such file');

        const big = await deploy(server, transport, `big-${transport}`);
        const bigFile = work.write(`${transport}-big.json`, big.derived);
        const stdin = Buffer.concat([
          Buffer.from('{"deploy_stdout":"'),
          Buffer.alloc(5 * 1024 * 1024, 'z'),
          Buffer.from([0xff, 0xfe, 0xc3]),
          Buffer.from(' last line","deploy_status_code":0,"result":"r"}'),
        ]);
        const trimmed = await runNotify([bigFile], work.env, stdin).done;
        assert.equal(trimmed.code, 0, `${transport}: ${trimmed.stderr}`);
        const bigDeployment = await deploymentOf(server, big.id);
        assert.equal(bigDeployment.status, 'COMPLETE', `${transport}: ${bigDeployment.status_reason}`);
        const stdout = bigDeployment.output_values?.deploy_stdout as string;
        assert.match(stdout, /^\[heat-config-notify: the first \d+ bytes were cut/);
        assert.ok(stdout.endsWith('z\uFFFD\uFFFD\uFFFD last line'), JSON.stringify(stdout.slice(-30)));
        assert.equal(bigDeployment.output_values?.result, 'r');
      }
      assert.deepEqual(existsSync(work.outbox) ? readdirSync(work.outbox) : [], [], 'everything delivered');
    } finally {
      await server.close();
      rmSync(work.root, { recursive: true, force: true });
    }
  },
);

test('a late signal to a finished deployment is rejected (409): exit 1 with the reason, not retried', async () => {
  const server = await startServer();
  const work = workdir();
  try {
    const { id, derived } = await deploy(server, 'HEARTH_SIGNAL', 'late');
    const file = work.write('late.json', derived);
    assert.equal((await runNotify([file], work.env, '{"deploy_status_code":0}').done).code, 0);
    assert.equal((await deploymentOf(server, id)).status, 'COMPLETE');
    const late = await runNotify([file], work.env, '{"deploy_status_code":1}').done;
    assert.equal(late.code, 1);
    assert.match(
      late.stderr,
      /signal rejected; it will not be sent again.*answered 409: Deployment .* is CREATE_COMPLETE, not IN_PROGRESS/,
    );
    assert.equal((await deploymentOf(server, id)).status, 'COMPLETE');
    assert.deepEqual(readdirSync(work.outbox), []);
  } finally {
    await server.close();
    rmSync(work.root, { recursive: true, force: true });
  }
});

test('heartbeat: extends the deadline of a HEARTH_SIGNAL deployment; a no-op for CFN_SIGNAL', async () => {
  const server = await startServer();
  const work = workdir();
  try {
    const hearth = await deploy(server, 'HEARTH_SIGNAL', 'beat');
    const file = work.write('beat.json', hearth.derived);
    const beat = await runNotify(['--heartbeat', '--progress', '50', file, 'halfway'], work.env).done;
    assert.equal(beat.code, 0, beat.stderr);
    const after = (await deploymentOf(server, hearth.id)) as Deployment & { last_heartbeat_time: string | null };
    assert.ok(after.last_heartbeat_time, 'the server recorded the heartbeat');
    const cfn = await deploy(server, 'CFN_SIGNAL', 'nobeat');
    const cfnFile = work.write('nobeat.json', cfn.derived);
    assert.equal((await runNotify(['--heartbeat', cfnFile, 'x'], work.env).done).code, 0);
    const untouched = (await deploymentOf(server, cfn.id)) as Deployment & { last_heartbeat_time: string | null };
    assert.equal(untouched.last_heartbeat_time, null);
  } finally {
    await server.close();
    rmSync(work.root, { recursive: true, force: true });
  }
});

/** A test around an outage of hearth-server: a server on a data dir and port of its own, killed and started again at will. */
interface Outage {
  work: ReturnType<typeof workdir>;
  /** The server running now, or the one last killed. */
  server: Awaited<ReturnType<typeof spawnServer>>;
  /** Agent processes to kill at the end. */
  drains: ChildProcess[];
  /** Kills the server (SIGKILL) and waits for its exit. */
  kill(): Promise<void>;
  /** Starts the server again on the same data dir and port. */
  restart(): Promise<void>;
}

/** Runs `body` with an Outage, then kills what is left and removes the data dir and the agent's files. */
async function withOutage(body: (outage: Outage) => Promise<void>): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hearth-notify-data-'));
  const port = await freePort();
  const work = workdir();
  const outage: Outage = {
    work,
    server: await spawnServer(dataDir, port),
    drains: [],
    async kill() {
      this.server.child.kill('SIGKILL');
      await this.server.exited;
    },
    async restart() {
      this.server = await spawnServer(dataDir, port);
    },
  };
  try {
    await body(outage);
  } finally {
    for (const child of outage.drains) child.kill('SIGKILL');
    await outage.kill();
    await removeServerData(dataDir);
    rmSync(work.root, { recursive: true, force: true });
  }
}

for (const transport of ['HEARTH_SIGNAL', 'HEAT_SIGNAL'] as const) {
  test(
    `${transport}: the server killed before delivery gets the signal after it restarts, even though the drain was killed too`,
    { timeout: 120_000 },
    async () => {
      await withOutage(async (outage) => {
        const { work, drains } = outage;
        const { id, derived } = await deploy(outage.server, transport, 'outage');
        const file = work.write('outage.json', derived);
        await outage.kill();

        const queued = await runNotify([file], work.env, '{"deploy_stdout":"after the outage","deploy_status_code":0,"result":"kept"}')
          .done;
        assert.equal(queued.code, 0, queued.stderr);
        assert.match(queued.stderr, /queued in the outbox/);
        const [entryFile] = readdirSync(work.outbox);
        assert.ok(entryFile?.endsWith('.json'));
        assert.equal(statSync(join(work.outbox, entryFile!)).mode & 0o777, 0o600);
        assert.equal(statSync(work.outbox).mode & 0o777, 0o700);
        if (transport === 'HEAT_SIGNAL')
          assert.doesNotMatch(
            queued.stderr,
            new RegExp(String((derived.inputs as Array<{ name: string; value: string }>).find((i) => i.name === 'deploy_password')!.value)),
          );

        // The agent's drain retries while the server is down, then is killed itself; its state is on disk.
        const first = runNotify(['--drain', '--follow'], work.env);
        drains.push(first.child);
        const attempts = () => (JSON.parse(readFileSync(join(work.outbox, entryFile!), 'utf8')) as { attempts: number }).attempts;
        await until('two more failed attempts', () => (attempts() >= 3 ? true : undefined));
        first.child.kill('SIGKILL');
        await first.done;
        const kept = attempts();
        assert.ok(kept >= 3);

        await outage.restart();
        const second = runNotify(['--drain'], work.env);
        drains.push(second.child);
        const drained = await second.done;
        assert.equal(drained.code, 0, drained.stderr);
        assert.match(drained.stderr, new RegExp(`"msg":"signal delivered".*"attempts":${kept + 1}`));
        const done = await deploymentOf(outage.server, id);
        assert.equal(done.status, 'COMPLETE', done.status_reason ?? '');
        assert.equal(done.output_values?.result, 'kept');
        assert.deepEqual(readdirSync(work.outbox), []);
      });
    },
  );
}

test(
  'a signal queued through an outage goes out once the restarted server answers another, not after its backoff',
  { timeout: 120_000 },
  async () => {
    await withOutage(async (outage) => {
      const { work, drains } = outage;
      // The agent's own backoff (1 s doubling, capped at 5 min), not the short one of the other tests.
      const env = { ...work.env, HEARTH_NOTIFY_RETRY_BASE_MS: '1000', HEARTH_NOTIFY_RETRY_CAP_MS: '300000' };
      const waiting = await deploy(outage.server, 'HEARTH_SIGNAL', 'waiting');
      const fresh = await deploy(outage.server, 'HEARTH_SIGNAL', 'fresh');
      await outage.kill();
      const queued = await runNotify([work.write('waiting.json', waiting.derived)], env, '{"deploy_status_code":0,"result":"queued"}').done;
      assert.equal(queued.code, 0, queued.stderr);
      // Its backoff after failures through a long outage: the next attempt minutes away.
      const [entryFile] = readdirSync(work.outbox).filter((name) => name.endsWith('.json'));
      const entryPath = join(work.outbox, entryFile!);
      const entry = JSON.parse(readFileSync(entryPath, 'utf8')) as Record<string, unknown>;
      writeFileSync(entryPath, JSON.stringify({ ...entry, attempts: 9, nextAttemptAt: new Date(Date.now() + 280_000).toISOString() }), {
        mode: 0o600,
      });
      const daemon = runNotify(['--drain', '--follow'], env);
      drains.push(daemon.child);

      await outage.restart();
      const sent = await runNotify([work.write('fresh.json', fresh.derived)], env, '{"deploy_status_code":0,"result":"fresh"}').done;
      assert.equal(sent.code, 0, sent.stderr);
      const answeredAt = Date.now();
      await until(
        'the queued signal delivered',
        async () => ((await deploymentOf(outage.server, waiting.id)).status === 'COMPLETE' ? true : undefined),
        20_000,
      );
      const tookMs = Date.now() - answeredAt;
      assert.equal((await deploymentOf(outage.server, waiting.id)).output_values?.result, 'queued');
      assert.equal((await deploymentOf(outage.server, fresh.id)).status, 'COMPLETE');
      await until('an empty outbox, its mark removed too', () => (readdirSync(work.outbox).length === 0 ? true : undefined), 5_000);
      assert.ok(tookMs < 20_000, `${tookMs} ms`);
      daemon.child.kill('SIGTERM');
      assert.match((await daemon.done).stderr, /its server answered another signal since: trying this one again now/);
    });
  },
);

test('the daemon (--drain --follow) delivers a signal queued while it runs, and stops on SIGTERM', { timeout: 60_000 }, async () => {
  const server = await startServer();
  const work = workdir();
  try {
    const daemon = runNotify(['--drain', '--follow'], work.env);
    await until('the outbox dir', () => (existsSync(work.outbox) ? true : undefined));
    const { id, derived } = await deploy(server, 'CFN_SIGNAL', 'daemon');
    // Queued through the library, without the plain invocation's own attempt: only the daemon can deliver it.
    const log = createLogger({ name: 'test', level: 'error' });
    const queuedAt = Date.now();
    const entry = await queueSignal(deploymentInfo(derived), { result: 'via daemon' }, { outbox: new Outbox(work.outbox), log });
    assert.ok(entry);
    await until('COMPLETE', async () => ((await deploymentOf(server, id)).status === 'COMPLETE' ? true : undefined), 15_000);
    const delivered = Date.now() - queuedAt;
    // The rescan is every 30 s: well under that means the directory watch woke the daemon (slack for a loaded CI box).
    assert.ok(delivered < 15_000, `the daemon delivered ${delivered} ms after the entry was queued`);
    assert.equal((await deploymentOf(server, id)).output_values?.result, 'via daemon');
    await until('an empty outbox', () => (readdirSync(work.outbox).length === 0 ? true : undefined), 5_000);
    daemon.child.kill('SIGTERM');
    const stopped = await daemon.done;
    assert.equal(stopped.code, 0, stopped.stderr);
  } finally {
    await server.close();
    rmSync(work.root, { recursive: true, force: true });
  }
});

// heat-agents' own heat-config-notify is not packaged in Debian (`apt-cache search heat-agents` finds
// nothing). Point HEAT_CONFIG_NOTIFY_ORIGINAL at a checkout's script to run it side by side.
const original = process.env.HEAT_CONFIG_NOTIFY_ORIGINAL;
test(
  "side by side with heat-agents' heat-config-notify (CFN_SIGNAL, TEMP_URL_SIGNAL)",
  { skip: original ? false : 'heat-agents is not packaged in Debian; set HEAT_CONFIG_NOTIFY_ORIGINAL=/path/to/heat-config-notify to run' },
  async () => {
    const server = await startServer();
    const work = workdir();
    try {
      for (const transport of ['CFN_SIGNAL', 'TEMP_URL_SIGNAL']) {
        const outcomes: Array<[number | null, string]> = [];
        for (const [who, argv] of [
          ['original', ['python3', original!]],
          ['hearth', [process.execPath, BIN]],
        ] as const) {
          const { id, derived } = await deploy(server, transport, `${who}-${transport}`);
          const file = work.write(`${who}-${transport}.json`, derived);
          const child = spawn(argv[0], [...argv.slice(1), file], { env: work.env, stdio: ['pipe', 'ignore', 'pipe'] });
          child.stdin.end('{"deploy_stdout":"x","deploy_status_code":0,"result":"same"}');
          const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
          const after = await deploymentOf(server, id);
          outcomes.push([code, `${after.status} ${JSON.stringify(after.output_values)}`]);
        }
        assert.deepEqual(outcomes[1], outcomes[0], transport);
      }
    } finally {
      await server.close();
      rmSync(work.root, { recursive: true, force: true });
    }
  },
);
