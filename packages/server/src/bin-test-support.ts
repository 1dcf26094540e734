// What the tests that run hearth-server as a process share: the bin, a fresh temp dir per test, and a run
// of the bin with a clean environment (no inherited settings or secrets) under a chosen umask.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BIN = new URL('./bin.ts', import.meta.url).pathname;

/** The environment of a child hearth-server: this one's, without the settings and secrets `env` does not give. */
export function binEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const result: NodeJS.ProcessEnv = { ...process.env, ...env };
  const settings = ['NODE_EXTRA_CA_CERTS', 'HEARTH_DATABASE_URL', 'HEARTH_LISTEN', 'HEARTH_DATA_DIR', 'HEARTH_PUBLIC_URL'];
  for (const name of [...settings, 'HEARTH_ADMIN_TOKEN', 'HEARTH_SECRET_KEY']) if (!(name in env)) delete result[name];
  return result;
}

/** Runs hearth-server with args and env under `umask`; resolves with its exit code and output. */
export function hearthServer(
  args: string[],
  env: Record<string, string> = {},
  umask = '022',
): Promise<{ code: number; stdout: string; stderr: string }> {
  const command = `umask ${umask} && exec "$0" --import tsx "$@"`;
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', command, process.execPath, BIN, ...args], { env: binEnv(env), timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: typeof error?.code === 'number' ? error.code : error ? -1 : 0, stdout, stderr });
    });
  });
}

/** A test body run with a fresh temp dir, removed afterwards. */
export function withDir(run: (dir: string) => Promise<void>, prefix = 'hearth-bin-'): () => Promise<void> {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    try {
      await run(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}
