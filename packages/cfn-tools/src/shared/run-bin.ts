// Test support: runs one of this package's commands (bin/<cmd>.js) as a real process.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** How a command ended. */
export interface BinResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  durationMs: number;
}

/** The package's bin script for `command`, e.g. `cfn-signal`. */
export function binPath(command: string): string {
  return fileURLToPath(new URL(`../../bin/${command}.js`, import.meta.url));
}

/** The environment children get: the parent's without HEARTH_* and NODE_EXTRA_CA_CERTS, plus `extra`. */
export function binEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('HEARTH_') || key === 'NODE_EXTRA_CA_CERTS') delete env[key];
  return { ...env, ...extra };
}

/** Runs `command args` with `env` (see binEnv), optional stdin, and a hard timeout (default 30 s). */
export function runBin(
  command: string,
  args: string[],
  options: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {},
): Promise<BinResult> {
  const started = performance.now();
  const child = spawn(process.execPath, [binPath(command), ...args], { env: binEnv(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(options.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, durationMs: performance.now() - started });
    });
  });
}
