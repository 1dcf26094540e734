// hearth's os-collect-config against a real hearth-server on 127.0.0.1: the `hearth` collector's
// long-poll runs the command for a new deployment within a second (measured), the daemon reports
// itself with --status --json and re-executes on SIGHUP; the `cfn` and `heat` collectors fetch
// the same deployments as the server's own guest metadata.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { childEnv, startServer } from '../helpers/server.ts';
import { assertOnlyDeployment, guestMetadata, operatorApi, SCRIPT } from '../conformance/clients.ts';

const execFileAsync = promisify(execFile);
const BIN = new URL('../../packages/collect-config/bin/os-collect-config.js', import.meta.url).pathname;

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Lines the command appended: `<epoch ms> <OS_CONFIG_FILES>`. */
function runs(file: string): Array<{ at: number; files: string[] }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [at, files = ''] = line.split(' ');
      return { at: Number(at), files: files.split(':') };
    });
}

test('hearth collector: a new deployment reaches the command in under 1 s; --status --json; SIGHUP re-exec', async () => {
  const server = await startServer();
  const root = mkdtempSync(join(tmpdir(), 'hearth-occ-e2e-'));
  const env = childEnv({ HEARTH_ROOT: root });
  const runsFile = join(root, 'runs');
  let daemon: ReturnType<typeof spawn> | undefined;
  try {
    const api = operatorApi(server);
    const created = await api.createServer({ name: 'vm1', software_config_transport: 'HEARTH_LONG_POLL' });
    const hearth = created.os_collect_config.hearth!;
    assert.deepEqual(created.os_collect_config.collectors, ['hearth'] as unknown);
    const conf = join(root, 'os-collect-config.conf');
    writeFileSync(
      conf,
      [
        created.os_collect_config_conf.replace(
          'command = os-refresh-config',
          `command = printf '%s %s\\n' "$(date +%s%3N)" "$OS_CONFIG_FILES" >> ${runsFile}`,
        ),
        `access_key_id = ${created.credential.access_key_id}`,
        `secret_access_key = ${created.credential.secret_access_key}`,
        'wait = 20',
      ].join('\n'),
    );
    assert.match(readFileSync(conf, 'utf8'), /\[hearth\]\nmetadata_url = .*\nserver_id = /);
    let stderr = '';
    daemon = spawn(process.execPath, [BIN, '--config-file', conf, '--log-format', 'text'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    daemon.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));

    const cachedir = join(root, 'var/lib/os-collect-config');
    const first = await until('the first command run', () => runs(runsFile)[0]);
    assert.deepEqual(first.files, [join(cachedir, 'hearth.json')]);
    assert.equal(hearth.metadata_url, `${server.url}/v1/guest/metadata`);
    await new Promise((resolve) => setTimeout(resolve, 300)); // let the watcher settle into its held request

    const deploymentId = await api.deployScript(created.server.id);
    // From the commit's acknowledgement, not from before the two calls that create it: on a loaded
    // machine those alone can take a good part of a second. A watcher that missed the change would
    // run the command only when its 20 s wait ends.
    const createdAt = Date.now();
    const second = await until('the command run for the new deployment', () => runs(runsFile)[1], 5_000);
    const latency = second.at - createdAt;
    assert.ok(latency < 1000, `the command ran ${latency} ms after the deployment was created`);
    const cached = JSON.parse(readFileSync(join(cachedir, 'hearth.json'), 'utf8'));
    assertOnlyDeployment(cached, deploymentId, SCRIPT);
    assert.deepEqual(cached, await guestMetadata(server, created));
    await until('the commit after the command succeeded', () =>
      readFileSync(join(cachedir, 'hearth.json.last'), 'utf8') === readFileSync(join(cachedir, 'hearth.json'), 'utf8') ? true : undefined,
    );
    console.log(`# hearth long-poll: deployment -> command in ${latency} ms`);

    const status = spawnSync(process.execPath, [BIN, '--status', '--json'], { env, encoding: 'utf8' });
    assert.equal(status.status, 0, status.stderr);
    const state = JSON.parse(status.stdout);
    assert.equal(state.running, true);
    assert.equal(state.pid, daemon.pid);
    assert.equal(state.lastCommand.exitCode, 0);
    assert.deepEqual(
      state.collectors.map((c: { name: string; outcome: string }) => [c.name, c.outcome]),
      [['hearth', 'data']],
    );
    assert.equal(state.hearth.state, 'waiting');

    daemon.kill('SIGHUP');
    await until('the re-exec', () => (/Re-executing/.test(stderr) ? true : undefined), 5_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(daemon.exitCode, null, 'still running after SIGHUP (same pid)');
    assert.equal(runs(runsFile).length, 2, 'nothing changed: no command after the re-exec');
    await api.deployScript(created.server.id, '#!/bin/sh\necho again');
    await until('the command run after the re-exec', () => runs(runsFile)[2], 5_000);
  } finally {
    daemon?.kill('SIGTERM');
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
});

test('cfn and heat collectors fetch the same deployments as the guest metadata', async () => {
  const server = await startServer();
  const root = mkdtempSync(join(tmpdir(), 'hearth-occ-e2e-'));
  try {
    const api = operatorApi(server);
    await api.createStack('web');
    for (const [transport, collector] of [
      ['POLL_SERVER_CFN', 'cfn'],
      ['POLL_SERVER_HEAT', 'heat'],
    ] as const) {
      const created = await api.createServer({ name: `vm-${collector}`, software_config_transport: transport, stack: 'web' });
      const deploymentId = await api.deployScript(created.server.id);
      const conf = join(root, `${collector}.conf`);
      writeFileSync(conf, created.os_collect_config_conf);
      // Not spawnSync: the server runs in this process and must keep answering.
      const run = await execFileAsync(process.execPath, [BIN, '--print', '--config-file', conf], {
        env: childEnv({ HEARTH_ROOT: root }),
        encoding: 'utf8',
        timeout: 30_000,
      });
      const printed = JSON.parse(run.stdout);
      const expected = await guestMetadata(server, created);
      assertOnlyDeployment(expected, deploymentId, SCRIPT);
      assert.deepEqual(printed, { [collector]: expected }, `${collector} collector:\n${run.stderr}`);
    }
  } finally {
    await server.close();
    rmSync(root, { recursive: true, force: true });
  }
});
