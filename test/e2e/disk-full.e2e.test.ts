// A data dir whose disk fills up: hearth-server answers writes with a coded 507 that says so (not a
// 500 naming a failed rollback), keeps serving reads, and writes again once space is freed. The
// server runs in its own user and mount namespace on a small tmpfs (`unshare`), so the test needs
// no root and leaves no mount behind; the disk is filled and freed through /proc/PID/root. Its background
// tasks meanwhile log one line when they start failing and one when they work again, not a line per retry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childEnv, freePort, TEST_SECRET_KEY } from '../helpers/server.ts';

const TOKEN = 'disk-full-admin-token';

/** Why this test cannot run here, or false. */
function skipReason(): string | false {
  if (process.env.HEARTH_TEST_STORE === 'postgres') return 'a full SQLite data dir; the PostgreSQL pass has no data dir to fill';
  const probe = spawnSync(
    'unshare',
    [
      '--user',
      '--map-root-user',
      '--mount',
      'sh',
      '-c',
      'mount -t tmpfs -o size=64k tmpfs /mnt 2>/dev/null || mount -t tmpfs -o size=64k tmpfs /tmp',
    ],
    {
      timeout: 10_000,
    },
  );
  return probe.status === 0
    ? false
    : `cannot mount a tmpfs in a user namespace here (unshare: ${probe.stderr.toString().trim() || probe.status})`;
}

interface Reply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- replies of several shapes, each read field by field here
  body: Record<string, any>;
}

interface LogLine {
  level?: number;
  msg?: string;
  task?: string;
  state?: string;
  code?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * hearth-server with its data dir on a tmpfs of `size` in its own user and mount namespace, ready to
 * answer. `insideMount` is that tmpfs as the server sees it, reachable from this process.
 */
async function serveOnTmpfs(size: string, logLevel: string) {
  const mountPoint = mkdtempSync(join(tmpdir(), 'hearth-full-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const serve = `mount -t tmpfs -o size=${size} tmpfs '${mountPoint}' && exec '${process.execPath}' --import tsx packages/server/src/bin.ts serve --listen 127.0.0.1:${port} --data-dir '${mountPoint}/data' --log-level ${logLevel}`;
  const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', serve], {
    cwd: new URL('../..', import.meta.url).pathname,
    env: childEnv({ HEARTH_ADMIN_TOKEN: TOKEN, HEARTH_SECRET_KEY: TEST_SECRET_KEY }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const call = async (
    method: string,
    path: string,
    body?: unknown,
    auth: Record<string, string> = { 'x-auth-token': TOKEN },
  ): Promise<Reply> => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as Reply['body']) : {} };
  };
  const server = {
    child,
    call,
    stderr: () => stderr,
    insideMount: `/proc/${child.pid!}/root${mountPoint}`,
    /** The JSON log lines from character `from` of stderr on. */
    logLines: (from: number): LogLine[] =>
      stderr
        .slice(from)
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as LogLine),
    stop: async () => {
      child.kill('SIGKILL');
      await exited;
      rmSync(mountPoint, { recursive: true, force: true });
    },
  };
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      assert.ok(Date.now() < deadline, `hearth-server did not become ready: ${stderr}`);
      assert.equal(child.exitCode, null, `hearth-server exited: ${stderr}`);
      const ready = await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) return server;
      await sleep(100);
    }
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** Fills the tmpfs with a file (returned) until ENOSPC, then makes configs until the server answers 507. */
async function fillDisk(server: Awaited<ReturnType<typeof serveOnTmpfs>>): Promise<{ filler: string; full: Reply }> {
  const filler = join(server.insideMount, 'filler');
  const chunk = Buffer.alloc(64 * 1024);
  let written = 0;
  try {
    for (let i = 0; i < 10_000; i++) {
      writeFileSync(filler, chunk, { flag: 'a' });
      written += chunk.length;
    }
  } catch (error) {
    assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC', `filling the disk: ${String(error)}`);
  }
  assert.ok(written > 0);
  for (let i = 0; i < 50; i++) {
    const reply = await server.call('POST', '/v1/default/software_configs', { group: 'script', config: 'x'.repeat(30_000) });
    if (reply.status !== 200) return { filler, full: reply };
  }
  assert.fail('the disk never filled up');
}

test(
  'a full disk: writes get a coded 507, reads go on, and writes work again once space is freed',
  { skip: skipReason(), timeout: 120_000 },
  async () => {
    const server = await serveOnTmpfs('6m', 'fatal');
    const { call } = server;
    try {
      const vm = await call('POST', '/v1/default/servers', { name: 'vm' });
      assert.equal(vm.status, 201, JSON.stringify(vm.body));
      const agent = { authorization: `Bearer ${(vm.body.credential as { token: string }).token}` };
      const config = await call('POST', '/v1/default/software_configs', { group: 'script', config: 'true' });
      const configId = (config.body.software_config as { id: string }).id;
      const deployments: string[] = [];
      for (let i = 0; i < 3; i++) {
        const created = await call('POST', '/v1/default/software_deployments', {
          config_id: configId,
          server_id: (vm.body.server as { id: string }).id,
        });
        deployments.push((created.body.software_deployment as { id: string }).id);
      }

      // Fill the disk: a file takes what is left but a few KiB, then configs take those.
      const { filler, full } = await fillDisk(server);
      assert.equal(full.status, 507, JSON.stringify(full.body));
      assert.equal(full.body.error?.code, 'ERR_STORE_FULL');
      assert.match(full.body.error?.message ?? '', /disk .*full/);

      // The signal path (the writer thread) says the same, and the signal is not applied.
      const refused = await call(
        'POST',
        `/v1/guest/deployments/${deployments[0]!}/signal`,
        { deploy_status_code: 0, deploy_stdout: 'y'.repeat(60_000) },
        agent,
      );
      assert.equal(refused.status, 507, JSON.stringify(refused.body));
      assert.equal(refused.body.error?.code, 'ERR_STORE_FULL');
      // Reads go on.
      const shown = await call('GET', `/v1/default/software_deployments/${deployments[0]!}`);
      assert.equal(shown.status, 200);
      assert.equal((shown.body.software_deployment as { status: string }).status, 'IN_PROGRESS');
      assert.equal((await call('GET', '/v1/guest/metadata', undefined, agent)).status, 200);

      // Space is freed: the same signal is applied, and writes work again.
      unlinkSync(filler);
      const applied = await call(
        'POST',
        `/v1/guest/deployments/${deployments[0]!}/signal`,
        { deploy_status_code: 0, deploy_stdout: 'y'.repeat(60_000) },
        agent,
      );
      assert.equal(applied.status, 200, JSON.stringify(applied.body));
      assert.equal((await call('POST', '/v1/default/software_configs', { group: 'script', config: 'after' })).status, 200);
      const after = await call('GET', `/v1/default/software_deployments/${deployments[0]!}`);
      assert.equal((after.body.software_deployment as { status: string }).status, 'COMPLETE');
    } finally {
      await server.stop();
    }
  },
);

test('a fresh data dir on a full disk: serve exits 73 saying the disk is full', { skip: skipReason(), timeout: 60_000 }, async () => {
  const mountPoint = mkdtempSync(join(tmpdir(), 'hearth-tiny-'));
  try {
    const port = await freePort();
    const serve = `mount -t tmpfs -o size=48k tmpfs '${mountPoint}' && exec '${process.execPath}' --import tsx packages/server/src/bin.ts serve --listen 127.0.0.1:${port} --data-dir '${mountPoint}/data'`;
    const result = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', serve], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: childEnv({ HEARTH_ADMIN_TOKEN: TOKEN, HEARTH_SECRET_KEY: TEST_SECRET_KEY }),
      timeout: 50_000,
    });
    assert.equal(result.status, 73, result.stderr.toString());
    assert.match(result.stderr.toString(), /^hearth-server: cannot write .*: the disk holding it is full \(.*\): free space on it/m);
  } finally {
    rmSync(mountPoint, { recursive: true, force: true });
  }
});

test(
  'a full disk: one log line per background task when it starts failing and one when it recovers, no flood, no crash',
  { skip: skipReason(), timeout: 120_000 },
  async () => {
    const server = await serveOnTmpfs('6m', 'info');
    const { call, child, logLines } = server;
    try {
      const vm = await call('POST', '/v1/default/servers', { name: 'vm' });
      assert.equal(vm.status, 201, JSON.stringify(vm.body));
      const agent = { authorization: `Bearer ${vm.body.credential.token as string}` };
      const config = await call('POST', '/v1/default/software_configs', { group: 'script', config: 'true' });
      const created = await call('POST', '/v1/default/software_deployments', {
        config_id: config.body.software_config.id,
        server_id: vm.body.server.id,
        timeout: 3,
      });
      assert.equal(created.status, 200, JSON.stringify(created.body));
      const deploymentId = created.body.software_deployment.id as string;

      // Fill the disk; the deadline passes while it is full, and the agent's call is to be written as last seen.
      const { filler, full } = await fillDisk(server);
      assert.equal(full.status, 507, JSON.stringify(full.body));
      assert.equal((await call('GET', '/v1/guest/metadata', undefined, agent)).status, 200);
      const mark = server.stderr().length;
      await sleep(12_000);
      assert.equal(child.exitCode, null, `hearth-server exited while the disk was full: ${server.stderr().slice(-3000)}`);
      const background = logLines(mark).filter((line) => line.task !== undefined || line.msg === 'background task failed');
      const failing = (task: string) => background.filter((line) => line.task === task && line.state === 'failing');
      assert.equal(failing('deadline sweeper').length, 1, JSON.stringify(background));
      assert.equal(failing('last-seen writer').length, 1, JSON.stringify(background));
      assert.ok(background.length <= 5, `one line per task, not per retry: ${background.length} lines`);
      const first = failing('deadline sweeper')[0]!;
      assert.equal(first.level, 50);
      assert.equal(first.code, 'ERR_STORE_FULL');
      assert.match(first.msg ?? '', /^deadline sweeper is failing \(ERR_STORE_FULL: .*\): free space on the disk holding the database/);

      unlinkSync(filler);
      const recovered = (task: string) => logLines(mark).some((line) => line.task === task && line.state === 'recovered');
      for (let i = 0; i < 400 && !(recovered('deadline sweeper') && recovered('last-seen writer')); i++) await sleep(100);
      assert.ok(recovered('deadline sweeper') && recovered('last-seen writer'), JSON.stringify(logLines(mark).filter((l) => l.task)));
      const shown = await call('GET', `/v1/default/software_deployments/${deploymentId}`);
      assert.equal(shown.body.software_deployment.status, 'FAILED');
      assert.match(shown.body.software_deployment.status_reason as string, /^Timed out after 3 s/);
      const shownServer = await call('GET', `/v1/default/servers/${vm.body.server.id as string}`);
      assert.notEqual(shownServer.body.server.last_seen, null);
    } finally {
      await server.stop();
    }
  },
);
