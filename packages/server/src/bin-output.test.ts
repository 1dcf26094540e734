// Spawns a real `hearth-server serve` whose stdout and stderr readers go away (`hearth-server serve 2>&1 | head -1`):
// it keeps serving, and its log lines after that are lost without a crash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../test/helpers/server.ts';

const BIN = new URL('./bin.ts', import.meta.url).pathname;

test('serve whose stdout and stderr readers left keeps answering requests, and stops cleanly on SIGTERM', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hearth-bin-output-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HEARTH_ADMIN_TOKEN: 'test-admin-token',
    HEARTH_SECRET_KEY: 'test-secret-key-0123456789abcdef',
  };
  for (const name of ['NODE_EXTRA_CA_CERTS', 'HEARTH_DATABASE_URL', 'HEARTH_LISTEN', 'HEARTH_DATA_DIR', 'HEARTH_PUBLIC_URL'])
    delete env[name];
  const child = spawn(process.execPath, ['--import', 'tsx', BIN, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dir], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdout.destroy();
  child.stderr.destroy();
  try {
    let ready = false;
    for (let attempt = 0; attempt < 300 && !ready && child.exitCode === null; attempt += 1) {
      ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (response) => response.ok,
        () => false,
      );
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(ready, `hearth-server answered /readyz (exit code ${child.exitCode})`);
    // Each request is logged: every line goes into a pipe nobody reads any more.
    for (let i = 0; i < 5; i += 1) {
      const response = await fetch(`http://127.0.0.1:${port}/v1/default/servers`, { headers: { 'X-Auth-Token': 'test-admin-token' } });
      assert.equal(response.status, 200);
    }
    assert.equal(child.exitCode, null, 'still running');
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  } finally {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
