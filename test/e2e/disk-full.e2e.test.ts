// A data dir whose disk fills up: hearth-server answers writes with a coded 507 that says so (not a
// 500 naming a failed rollback), keeps serving reads, and writes again once space is freed. The
// server runs in its own user and mount namespace on a small tmpfs (`unshare`), so the test needs
// no root and leaves no mount behind; the disk is filled and freed through /proc/PID/root.
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
  body: { error?: { code?: string; message?: string } } & Record<string, unknown>;
}

test(
  'a full disk: writes get a coded 507, reads go on, and writes work again once space is freed',
  { skip: skipReason(), timeout: 120_000 },
  async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), 'hearth-full-'));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const serve = `mount -t tmpfs -o size=6m tmpfs '${mountPoint}' && exec '${process.execPath}' --import tsx packages/server/src/bin.ts serve --listen 127.0.0.1:${port} --data-dir '${mountPoint}/data' --log-level fatal`;
    const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', serve], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: childEnv({ HEARTH_ADMIN_TOKEN: TOKEN, HEARTH_SECRET_KEY: TEST_SECRET_KEY }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    // The tmpfs as the server sees it (its mount namespace), from this process.
    const insideMount = `/proc/${child.pid!}/root${mountPoint}`;
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
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        assert.ok(Date.now() < deadline, `hearth-server did not become ready: ${stderr}`);
        assert.equal(child.exitCode, null, `hearth-server exited: ${stderr}`);
        const ready = await fetch(`${url}/readyz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ready) break;
        await new Promise((r) => setTimeout(r, 100));
      }
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
      const filler = join(insideMount, 'filler');
      const chunk = Buffer.alloc(64 * 1024);
      let written = 0;
      try {
        for (;;) {
          writeFileSync(filler, chunk, { flag: 'a' });
          written += chunk.length;
        }
      } catch (error) {
        assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC', `filling the disk: ${String(error)}`);
      }
      assert.ok(written > 0);
      let full: Reply | undefined;
      for (let i = 0; i < 50 && !full; i++) {
        const reply = await call('POST', '/v1/default/software_configs', { group: 'script', config: 'x'.repeat(30_000) });
        if (reply.status !== 200) full = reply;
      }
      assert.ok(full, 'the disk never filled up');
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
      child.kill('SIGKILL');
      await exited;
      rmSync(mountPoint, { recursive: true, force: true });
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
