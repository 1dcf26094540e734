// The keyring backend against a D-Bus session bus that accepts connections and never answers (a stale socket,
// a wedged dbus-daemon): libsecret then blocks forever, so the agent must never make that call itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KEYTAR_MODULE } from './secret-store-keyring.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const CHILD_LIMIT_MS = 20_000;

/** Why the real keytar cannot be used here, or undefined when it can. */
function keytarMissing(): string | undefined {
  try {
    createRequire(import.meta.url)(KEYTAR_MODULE);
    return undefined;
  } catch (error) {
    return `${KEYTAR_MODULE} does not load here: ${(error as Error).message}`;
  }
}

/** Runs `code` as an ES module under tsx with `env`; its exit code (null when killed after CHILD_LIMIT_MS) and output. */
function runChild(code: string, env: NodeJS.ProcessEnv): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const childEnv = { ...env };
  delete childEnv.NODE_TEST_CONTEXT;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    cwd: repoRoot,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), CHILD_LIMIT_MS);
  return new Promise((resolve) => {
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

test('a D-Bus bus that never answers makes each operation fail after probeTimeoutMs, and the process still ends by itself', async (t) => {
  const missing = keytarMissing();
  if (missing !== undefined) {
    if (process.env.CI === 'true') assert.fail(missing);
    t.skip(missing);
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), 'hearth-silent-bus-'));
  const sockets = new Set<Socket>();
  const bus = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', () => undefined);
    socket.on('error', () => undefined);
  });
  const busPath = join(dir, 'bus');
  await new Promise<void>((resolve) => bus.listen(busPath, resolve));
  t.after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => bus.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  // Five operations: before the fix each left a libuv worker thread stuck in libsecret, so after four of them
  // file I/O hung too, and the process never exited, not even through process.exit().
  const module = join(repoRoot, 'packages/agent-kit/src/secret-store-keyring.ts');
  const code = `
    const { createKeyringSecretStore } = await import(${JSON.stringify(module)});
    const { readFile } = await import('node:fs/promises');
    const store = createKeyringSecretStore({ service: 'hearth-test', probeTimeoutMs: 300 });
    for (let i = 0; i < 5; i++) {
      const started = Date.now();
      const error = await store.get('deploy_password').then(() => undefined, (reason) => reason);
      console.log(JSON.stringify({ code: error?.code, message: error?.message, ms: Date.now() - started }));
    }
    await readFile(${JSON.stringify(module)});
    console.log('file I/O still works');
  `;
  const started = Date.now();
  const result = await runChild(code, { ...process.env, DBUS_SESSION_BUS_ADDRESS: `unix:path=${busPath}` });
  const elapsedMs = Date.now() - started;
  assert.equal(result.status, 0, `the child did not end by itself within ${CHILD_LIMIT_MS} ms:\n${result.stdout}\n${result.stderr}`);
  const lines = result.stdout.trim().split('\n');
  assert.equal(lines.pop(), 'file I/O still works');
  assert.equal(lines.length, 5);
  for (const line of lines) {
    const outcome = JSON.parse(line) as { code: string; message: string; ms: number };
    assert.equal(outcome.code, 'ERR_SECRET_KEYRING_UNAVAILABLE', outcome.message);
    assert.match(outcome.message, /got no answer within 300 ms/);
    assert.match(outcome.message, new RegExp(`DBUS_SESSION_BUS_ADDRESS=unix:path=${busPath}`));
    assert.ok(outcome.ms < 5000, `one failing operation took ${outcome.ms} ms`);
  }
  assert.ok(elapsedMs < CHILD_LIMIT_MS, `took ${elapsedMs} ms`);
});
