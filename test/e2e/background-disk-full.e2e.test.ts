// hearth-server's background tasks while its disk is full (as disk-full.e2e.test.ts makes one: a
// small tmpfs in the server's own user and mount namespace): each task logs one line when it starts
// failing, with the coded reason and what to do, not a line per retry; the process keeps running;
// once space is freed each logs one line that it works again, and the work is done.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { childEnv, freePort, TEST_SECRET_KEY } from '../helpers/server.ts';

const TOKEN = 'background-disk-full-admin-token';

/** Why this test cannot run here, or false. */
function skipReason(): string | false {
  if (process.env.HEARTH_TEST_STORE === 'postgres') return 'a full SQLite data dir; the PostgreSQL pass has no data dir to fill';
  const probe = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {
    timeout: 10_000,
  });
  return probe.status === 0 ? false : `cannot mount a tmpfs in a user namespace here (unshare: ${probe.stderr.toString().trim()})`;
}

interface LogLine {
  level?: number;
  msg?: string;
  task?: string;
  state?: string;
  code?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test(
  'a full disk: one log line per background task when it starts failing and one when it recovers, no flood, no crash',
  { skip: skipReason(), timeout: 120_000 },
  async () => {
    const mountPoint = mkdtempSync(join(tmpdir(), 'hearth-bg-full-'));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const serve = `mount -t tmpfs -o size=6m tmpfs '${mountPoint}' && exec '${process.execPath}' --import tsx packages/server/src/bin.ts serve --listen 127.0.0.1:${port} --data-dir '${mountPoint}/data' --log-level info`;
    const child = spawn('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', serve], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: childEnv({ HEARTH_ADMIN_TOKEN: TOKEN, HEARTH_SECRET_KEY: TEST_SECRET_KEY }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const logLines = (from: number): LogLine[] =>
      stderr
        .slice(from)
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as LogLine);
    const call = async (method: string, path: string, body?: unknown, auth: Record<string, string> = { 'x-auth-token': TOKEN }) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await response.text();
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- replies of several shapes, each read field by field here
      return { status: response.status, body: (text ? JSON.parse(text) : {}) as Record<string, any> };
    };
    try {
      for (let i = 0; i < 300; i++) {
        assert.equal(child.exitCode, null, `hearth-server exited: ${stderr}`);
        if (
          await fetch(`${url}/readyz`).then(
            (r) => r.ok,
            () => false,
          )
        )
          break;
        await sleep(100);
      }
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
      const filler = `/proc/${child.pid!}/root${mountPoint}/filler`;
      const chunk = Buffer.alloc(64 * 1024);
      try {
        for (let i = 0; i < 200; i++) writeFileSync(filler, chunk, { flag: 'a' });
      } catch (error) {
        assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
      }
      let full = false;
      for (let i = 0; i < 50 && !full; i++)
        full = (await call('POST', '/v1/default/software_configs', { group: 'script', config: 'x'.repeat(30_000) })).status === 507;
      assert.ok(full, 'the disk never filled up');
      assert.equal((await call('GET', '/v1/guest/metadata', undefined, agent)).status, 200);
      const mark = stderr.length;
      await sleep(12_000);
      assert.equal(child.exitCode, null, `hearth-server exited while the disk was full: ${stderr.slice(-3000)}`);
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
      const server = await call('GET', `/v1/default/servers/${vm.body.server.id as string}`);
      assert.notEqual(server.body.server.last_seen, null);
    } finally {
      child.kill('SIGKILL');
      await exited;
      rmSync(mountPoint, { recursive: true, force: true });
    }
  },
);
